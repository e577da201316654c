#include "expr/interpret.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnlab/error.h"

namespace attnlab::expr {
namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

template <typename T>
T real_mod(T a, T b) {
  return a - std::floor(a / b) * b;
}

template <typename T>
std::int64_t saturate(T x) {
  if (!(x == x)) return 0;
  if (x >= T(2147483647.0)) return 2147483647;
  if (x <= T(-2147483648.0)) return -2147483647 - 1;
  return static_cast<std::int64_t>(x);
}

// A comparison of two operand rows (real or integer) through `each`; false for another op.
template <typename V, typename Each>
bool compare(Op op, const V* a, const V* b, Each& each) {
  switch (op) {
    case Op::lt: each([&](std::size_t e) { return a[e] < b[e]; }); return true;
    case Op::le: each([&](std::size_t e) { return a[e] <= b[e]; }); return true;
    case Op::gt: each([&](std::size_t e) { return a[e] > b[e]; }); return true;
    case Op::ge: each([&](std::size_t e) { return a[e] >= b[e]; }); return true;
    case Op::eq: each([&](std::size_t e) { return a[e] == b[e]; }); return true;
    case Op::ne: each([&](std::size_t e) { return a[e] != b[e]; }); return true;
    default: return false;
  }
}

}  // namespace

template <typename T>
RowEvaluator<T>::RowEvaluator(const Program& program, const std::vector<int>& roots,
                              const std::vector<TensorSpec>& tensors)
    : p_(program), tensors_(tensors), live_(program.live(roots)), real_(program.nodes.size()),
      int_(program.nodes.size()), offsets_(program.nodes.size()) {}

template <typename T>
void RowEvaluator<T>::run(const RowInputs<T>& in, std::int64_t n) {
  const auto count = static_cast<std::size_t>(n);
  for (std::size_t k = 0; k < p_.nodes.size(); ++k) {
    if (!live_[k]) continue;
    const Node& node = p_.nodes[k];
    const bool is_real = node.type == Type::real;
    std::vector<T>& r = real_[k];
    std::vector<std::int64_t>& z = int_[k];
    if (is_real) r.resize(count);
    else z.resize(count);
    auto R = [&](int i) { return real_[static_cast<std::size_t>(node.args[static_cast<std::size_t>(i)])].data(); };
    auto Z = [&](int i) { return int_[static_cast<std::size_t>(node.args[static_cast<std::size_t>(i)])].data(); };
    // Applies f(e) for e in [0, n) into the node's values.
    auto each = [&](auto f) {
      for (std::size_t e = 0; e < count; ++e) {
        if (is_real) r[e] = static_cast<T>(f(e));
        else z[e] = static_cast<std::int64_t>(f(e));
      }
    };
    switch (node.op) {
      case Op::constant:
        if (is_real) std::fill(r.begin(), r.end(), static_cast<T>(node.imm_real));
        else std::fill(z.begin(), z.end(), node.imm_int);
        break;
      case Op::variable:
        switch (node.var) {
          case Var::score: std::copy(in.score, in.score + n, r.begin()); break;
          case Var::b: std::fill(z.begin(), z.end(), in.b); break;
          case Var::h: std::fill(z.begin(), z.end(), in.h); break;
          case Var::q_idx: std::fill(z.begin(), z.end(), in.q_idx); break;
          case Var::kv_idx:
            for (std::size_t e = 0; e < count; ++e) z[e] = in.kv_idx0 + static_cast<std::int64_t>(e);
            break;
          case Var::q_len: std::fill(z.begin(), z.end(), in.q_len); break;
          case Var::kv_len: std::fill(z.begin(), z.end(), in.kv_len); break;
        }
        break;
      case Op::load: {
        const TensorSpec& t = tensors_[static_cast<std::size_t>(node.tensor)];
        std::vector<std::int64_t>& off = offsets_[k];
        off.assign(count, 0);
        for (std::size_t d = 0; d < node.args.size(); ++d) {
          const std::int64_t* idx = Z(static_cast<int>(d));
          const std::int64_t size = t.shape[d];
          for (std::size_t e = 0; e < count; ++e) {
            ATTNLAB_CHECK(idx[e] >= 0 && idx[e] < size,
                          "score expressions: index {} of tensor '{}' is {} at q_idx {}, kv_idx {}, outside [0, {}]",
                          d + 1, t.name, idx[e], in.q_idx, in.kv_idx0 + static_cast<std::int64_t>(e), size - 1);
            off[e] = off[e] * size + idx[e];
          }
        }
        const T* data = in.tensors[node.tensor];
        for (std::size_t e = 0; e < count; ++e) r[e] = data[off[e]];
        break;
      }
      case Op::to_real: {
        const std::int64_t* a = Z(0);
        each([&](std::size_t e) { return static_cast<T>(a[e]); });
        break;
      }
      case Op::to_int: {
        const T* a = R(0);
        each([&](std::size_t e) { return saturate(a[e]); });
        break;
      }
      default:
        if (is_real) {
          const T* a = node.args.empty() ? nullptr : (p_.nodes[static_cast<std::size_t>(node.args[0])].type == Type::real ? R(0) : nullptr);
          const T* b2 = node.args.size() > 1 ? R(1) : nullptr;
          switch (node.op) {
            case Op::neg: each([&](std::size_t e) { return -a[e]; }); break;
            case Op::add: each([&](std::size_t e) { return a[e] + b2[e]; }); break;
            case Op::sub: each([&](std::size_t e) { return a[e] - b2[e]; }); break;
            case Op::mul: each([&](std::size_t e) { return a[e] * b2[e]; }); break;
            case Op::div: each([&](std::size_t e) { return a[e] / b2[e]; }); break;
            case Op::mod: each([&](std::size_t e) { return real_mod(a[e], b2[e]); }); break;
            case Op::select: {
              const std::int64_t* c = Z(0);
              const T* x = R(1);
              const T* y = R(2);
              each([&](std::size_t e) { return c[e] ? x[e] : y[e]; });
              break;
            }
            case Op::abs: each([&](std::size_t e) { return std::abs(a[e]); }); break;
            case Op::sign: each([&](std::size_t e) { return static_cast<T>((a[e] > T(0)) - (a[e] < T(0))); }); break;
            case Op::min: each([&](std::size_t e) { return a[e] <= b2[e] ? a[e] : b2[e]; }); break;
            case Op::max: each([&](std::size_t e) { return a[e] >= b2[e] ? a[e] : b2[e]; }); break;
            case Op::exp: each([&](std::size_t e) { return std::exp(a[e]); }); break;
            case Op::log: each([&](std::size_t e) { return std::log(a[e]); }); break;
            case Op::sqrt: each([&](std::size_t e) { return std::sqrt(a[e]); }); break;
            case Op::tanh: each([&](std::size_t e) { return std::tanh(a[e]); }); break;
            case Op::sigmoid: each([&](std::size_t e) { return T(1) / (T(1) + std::exp(-a[e])); }); break;
            case Op::floor: each([&](std::size_t e) { return std::floor(a[e]); }); break;
            case Op::ceil: each([&](std::size_t e) { return std::ceil(a[e]); }); break;
            case Op::pow: each([&](std::size_t e) { return std::pow(a[e], b2[e]); }); break;
            default: throw Error("score expressions: a real node of an unexpected op");
          }
          break;
        }
        // Integer and boolean nodes; comparisons of reals read real operands.
        const bool real_operands = !node.args.empty() && node.op != Op::select &&
                                   p_.nodes[static_cast<std::size_t>(node.args[0])].type == Type::real;
        if (real_operands) {
          if (!compare(node.op, R(0), R(1), each))
            throw Error("score expressions: an integer node of real operands of an unexpected op");
          break;
        }
        const std::int64_t* a = Z(0);
        const std::int64_t* b2 = node.args.size() > 1 ? Z(1) : nullptr;
        if (b2 && compare(node.op, a, b2, each)) break;
        switch (node.op) {
          case Op::neg: each([&](std::size_t e) { return -a[e]; }); break;
          case Op::logical_not: each([&](std::size_t e) { return !a[e]; }); break;
          case Op::add: each([&](std::size_t e) { return a[e] + b2[e]; }); break;
          case Op::sub: each([&](std::size_t e) { return a[e] - b2[e]; }); break;
          case Op::mul: each([&](std::size_t e) { return a[e] * b2[e]; }); break;
          case Op::div: each([&](std::size_t e) { return floor_div(a[e], b2[e]); }); break;
          case Op::mod: each([&](std::size_t e) { return a[e] - floor_div(a[e], b2[e]) * b2[e]; }); break;
          case Op::logical_and: each([&](std::size_t e) { return a[e] && b2[e]; }); break;
          case Op::logical_or: each([&](std::size_t e) { return a[e] || b2[e]; }); break;
          case Op::select: {
            const std::int64_t* y = Z(2);
            each([&](std::size_t e) { return a[e] ? b2[e] : y[e]; });
            break;
          }
          case Op::abs: each([&](std::size_t e) { return a[e] < 0 ? -a[e] : a[e]; }); break;
          case Op::sign: each([&](std::size_t e) { return (a[e] > 0) - (a[e] < 0); }); break;
          case Op::min: each([&](std::size_t e) { return std::min(a[e], b2[e]); }); break;
          case Op::max: each([&](std::size_t e) { return std::max(a[e], b2[e]); }); break;
          default: throw Error("score expressions: an integer node of an unexpected op");
        }
    }
  }
}

template class RowEvaluator<float>;
template class RowEvaluator<double>;

}  // namespace attnlab::expr
