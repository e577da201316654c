// The program's nodes: adding with sharing and folding, liveness, its text, and the ranges of
// values its nodes take (interval arithmetic), which prove indices and integers in range when an
// expression is checked and classify tiles as kept, masked or mixed when the kernels run.
#include "expr/ir.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace attnlab::expr {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double a_sign(double x) { return static_cast<double>((x > 0.0) - (x < 0.0)); }
double floor_div(double a, double b) { return std::floor(a / b); }
double floor_mod(double a, double b) { return a - std::floor(a / b) * b; }

// The value of an integer or boolean op of constant arguments (exact in 64 bits for the ranges
// the checks allow).
std::int64_t fold_int(Op op, const std::vector<std::int64_t>& v) {
  auto div = [](std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  };
  switch (op) {
    case Op::neg: return -v[0];
    case Op::logical_not: return !v[0];
    case Op::add: return v[0] + v[1];
    case Op::sub: return v[0] - v[1];
    case Op::mul: return v[0] * v[1];
    case Op::div: return div(v[0], v[1]);
    case Op::mod: return v[0] - div(v[0], v[1]) * v[1];
    case Op::lt: return v[0] < v[1];
    case Op::le: return v[0] <= v[1];
    case Op::gt: return v[0] > v[1];
    case Op::ge: return v[0] >= v[1];
    case Op::eq: return v[0] == v[1];
    case Op::ne: return v[0] != v[1];
    case Op::logical_and: return v[0] && v[1];
    case Op::logical_or: return v[0] || v[1];
    case Op::select: return v[0] ? v[1] : v[2];
    case Op::abs: return v[0] < 0 ? -v[0] : v[0];
    case Op::sign: return (v[0] > 0) - (v[0] < 0);
    case Op::min: return std::min(v[0], v[1]);
    case Op::max: return std::max(v[0], v[1]);
    default: return 0;
  }
}

Interval hull(std::initializer_list<double> xs) {
  Interval r{kInf, -kInf};
  for (double x : xs) {
    if (std::isnan(x)) return {};
    r.lo = std::min(r.lo, x);
    r.hi = std::max(r.hi, x);
  }
  return r;
}

Interval boolean(bool can_be_false, bool can_be_true) {
  return {can_be_false ? 0.0 : 1.0, can_be_true ? 1.0 : 0.0};
}

// a * b where 0 * inf counts as 0 (an integer range's end is never infinite; a real one's product
// is then unbounded anyway).
double times(double a, double b) { return a == 0.0 || b == 0.0 ? 0.0 : a * b; }

// The range of a monotone function over [lo, hi].
template <typename F>
Interval increasing(const Interval& x, F f) {
  return {f(x.lo), f(x.hi)};
}

}  // namespace

const char* type_name(Type type) {
  switch (type) {
    case Type::integer: return "integer";
    case Type::real: return "real";
    case Type::boolean: return "bool";
  }
  return "?";
}

const char* var_name(Var var) {
  static constexpr const char* kNames[] = {"score", "b", "h", "q_idx", "kv_idx", "q_len", "kv_len"};
  return kNames[static_cast<int>(var)];
}

const char* op_name(Op op) {
  static constexpr const char* kNames[] = {
      "const", "var", "load", "to_real", "to_int", "neg", "not", "add", "sub", "mul", "div", "mod", "lt", "le",
      "gt", "ge", "eq", "ne", "and", "or", "select", "abs", "sign", "min", "max", "exp", "log", "sqrt", "tanh",
      "sigmoid", "floor", "ceil", "pow"};
  return kNames[static_cast<int>(op)];
}

int Program::add(Node node) {
  // Fold integer and boolean ops of constants (real ones are left to the kernels' precision).
  const bool foldable = node.type != Type::real && node.op != Op::constant && node.op != Op::variable &&
                        node.op != Op::load && node.op != Op::to_int && !node.args.empty() &&
                        std::all_of(node.args.begin(), node.args.end(), [&](int a) {
                          return nodes[static_cast<std::size_t>(a)].op == Op::constant &&
                                 nodes[static_cast<std::size_t>(a)].type != Type::real;
                        });
  if (foldable) {
    std::vector<std::int64_t> v;
    for (int a : node.args) v.push_back(nodes[static_cast<std::size_t>(a)].imm_int);
    if (!((node.op == Op::div || node.op == Op::mod) && v[1] == 0)) {
      const std::int64_t value = fold_int(node.op, v);
      node = Node{Op::constant, node.type};
      node.imm_int = value;
    }
  }
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = nodes[k];
    if (n.op == node.op && n.type == node.type && n.var == node.var && n.tensor == node.tensor && n.args == node.args &&
        n.imm_int == node.imm_int && (n.imm_real == node.imm_real || (std::isnan(n.imm_real) && std::isnan(node.imm_real))))
      return static_cast<int>(k);
  }
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size() - 1);
}

int Program::constant_real(double v) {
  Node n{Op::constant, Type::real};
  n.imm_real = v;
  return add(std::move(n));
}

int Program::constant_int(std::int64_t v) {
  Node n{Op::constant, Type::integer};
  n.imm_int = v;
  return add(std::move(n));
}

std::vector<bool> Program::live(const std::vector<int>& roots) const {
  std::vector<bool> used(nodes.size(), false);
  for (int r : roots)
    if (r >= 0) used[static_cast<std::size_t>(r)] = true;
  for (std::size_t k = nodes.size(); k-- > 0;)
    if (used[k])
      for (int a : nodes[k].args) used[static_cast<std::size_t>(a)] = true;
  return used;
}

std::string Program::text() const {
  std::string out;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = nodes[k];
    out += fmt::format("%{} = {}.{}", k, op_name(n.op), type_name(n.type));
    if (n.op == Op::constant) out += n.type == Type::real ? fmt::format(" {:a}", n.imm_real) : fmt::format(" {}", n.imm_int);
    if (n.op == Op::variable) out += fmt::format(" {}", var_name(n.var));
    if (n.op == Op::load) out += fmt::format(" t{}", n.tensor);
    for (int a : n.args) out += fmt::format(" %{}", a);
    out += '\n';
  }
  out += fmt::format("score %{} mask %{} d_score %{}", score, mask, d_score);
  for (const auto& g : d_loads) out += fmt::format(" d%{} %{}", g.load, g.grad);
  return out + '\n';
}

VarRanges static_ranges(const Limits& limits) {
  VarRanges r;
  const double positions = static_cast<double>(limits.max_length);
  r.vars[static_cast<int>(Var::score)] = {};
  r.vars[static_cast<int>(Var::b)] = {0.0, 16777215.0};  // batch rows below 2^24
  r.vars[static_cast<int>(Var::h)] = {0.0, static_cast<double>(limits.heads - 1)};
  r.vars[static_cast<int>(Var::q_idx)] = {0.0, positions - 1};
  r.vars[static_cast<int>(Var::kv_idx)] = {0.0, positions - 1};
  r.vars[static_cast<int>(Var::q_len)] = {0.0, positions};
  r.vars[static_cast<int>(Var::kv_len)] = {0.0, positions};
  return r;
}

std::vector<Interval> intervals(const Program& program, const VarRanges& ranges, int upto) {
  std::vector<Interval> iv(program.nodes.size());
  const std::size_t end = upto >= 0 ? static_cast<std::size_t>(upto) + 1 : program.nodes.size();
  for (std::size_t k = 0; k < end; ++k) {
    const Node& n = program.nodes[k];
    auto arg = [&](int i) { return iv[static_cast<std::size_t>(n.args[static_cast<std::size_t>(i)])]; };
    const bool integer = n.type == Type::integer;
    Interval r;
    switch (n.op) {
      case Op::constant: {
        const double v = n.type == Type::real ? n.imm_real : static_cast<double>(n.imm_int);
        r = {v, v};
        break;
      }
      case Op::variable: r = ranges.vars[static_cast<int>(n.var)]; break;
      case Op::load: r = {}; break;
      case Op::to_real: r = arg(0); break;
      case Op::to_int: r = {std::trunc(std::max(arg(0).lo, -2147483648.0)), std::trunc(std::min(arg(0).hi, 2147483647.0))}; break;
      case Op::neg: r = {-arg(0).hi, -arg(0).lo}; break;
      case Op::logical_not: r = {1.0 - arg(0).hi, 1.0 - arg(0).lo}; break;
      case Op::add: r = {arg(0).lo + arg(1).lo, arg(0).hi + arg(1).hi}; break;
      case Op::sub: r = {arg(0).lo - arg(1).hi, arg(0).hi - arg(1).lo}; break;
      case Op::mul: {
        const Interval a = arg(0), b = arg(1);
        r = hull({times(a.lo, b.lo), times(a.lo, b.hi), times(a.hi, b.lo), times(a.hi, b.hi)});
        break;
      }
      case Op::div: {
        const Interval a = arg(0), b = arg(1);
        if (b.lo <= 0.0 && b.hi >= 0.0) {
          r = {};
          break;
        }
        if (integer)
          r = hull({floor_div(a.lo, b.lo), floor_div(a.lo, b.hi), floor_div(a.hi, b.lo), floor_div(a.hi, b.hi)});
        else
          r = hull({a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi});
        break;
      }
      case Op::mod: {
        const Interval a = arg(0), b = arg(1);
        if (b.lo <= 0.0 && b.hi >= 0.0) {
          r = {};
        } else if (integer && b.lo == b.hi && a.lo >= 0.0 && a.hi < b.lo) {
          r = a;  // already a remainder
        } else if (integer && b.lo == b.hi && std::floor(a.lo / b.lo) == std::floor(a.hi / b.lo)) {
          r = {floor_mod(a.lo, b.lo), floor_mod(a.hi, b.lo)};  // one period: monotone
          if (r.lo > r.hi) std::swap(r.lo, r.hi);
        } else {
          const double m = std::max(std::abs(b.lo), std::abs(b.hi));
          const double top = integer ? m - 1.0 : m;
          r = b.lo > 0.0 ? Interval{0.0, top} : Interval{-top, 0.0};
        }
        break;
      }
      case Op::lt: r = boolean(arg(0).hi >= arg(1).lo, arg(0).lo < arg(1).hi); break;
      case Op::le: r = boolean(arg(0).hi > arg(1).lo, arg(0).lo <= arg(1).hi); break;
      case Op::gt: r = boolean(arg(0).lo <= arg(1).hi, arg(0).hi > arg(1).lo); break;
      case Op::ge: r = boolean(arg(0).lo < arg(1).hi, arg(0).hi >= arg(1).lo); break;
      case Op::eq: {
        const Interval a = arg(0), b = arg(1);
        const bool disjoint = a.hi < b.lo || b.hi < a.lo;
        const bool same_point = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
        r = boolean(!same_point, !disjoint);
        break;
      }
      case Op::ne: {
        const Interval a = arg(0), b = arg(1);
        const bool disjoint = a.hi < b.lo || b.hi < a.lo;
        const bool same_point = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
        r = boolean(!disjoint, !same_point);
        break;
      }
      case Op::logical_and: r = {std::min(arg(0).lo, arg(1).lo), std::min(arg(0).hi, arg(1).hi)}; break;
      case Op::logical_or: r = {std::max(arg(0).lo, arg(1).lo), std::max(arg(0).hi, arg(1).hi)}; break;
      case Op::select: {
        const Interval c = arg(0), x = arg(1), y = arg(2);
        if (c.known_true()) r = x;
        else if (c.known_false()) r = y;
        else r = {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
        break;
      }
      case Op::abs: {
        const Interval a = arg(0);
        if (a.lo >= 0.0) r = a;
        else if (a.hi <= 0.0) r = {-a.hi, -a.lo};
        else r = {0.0, std::max(-a.lo, a.hi)};
        break;
      }
      case Op::sign: r = {a_sign(arg(0).lo), a_sign(arg(0).hi)}; break;
      case Op::min: r = {std::min(arg(0).lo, arg(1).lo), std::min(arg(0).hi, arg(1).hi)}; break;
      case Op::max: r = {std::max(arg(0).lo, arg(1).lo), std::max(arg(0).hi, arg(1).hi)}; break;
      case Op::exp: r = increasing(arg(0), [](double x) { return std::exp(x); }); break;
      case Op::log: r = arg(0).lo < 0.0 ? Interval{} : increasing(arg(0), [](double x) { return std::log(x); }); break;
      case Op::sqrt: r = arg(0).lo < 0.0 ? Interval{} : increasing(arg(0), [](double x) { return std::sqrt(x); }); break;
      case Op::tanh: r = increasing(arg(0), [](double x) { return std::tanh(x); }); break;
      case Op::sigmoid: r = increasing(arg(0), [](double x) { return 1.0 / (1.0 + std::exp(-x)); }); break;
      case Op::floor: r = increasing(arg(0), [](double x) { return std::floor(x); }); break;
      case Op::ceil: r = increasing(arg(0), [](double x) { return std::ceil(x); }); break;
      case Op::pow: r = {}; break;
    }
    if (std::isnan(r.lo) || std::isnan(r.hi)) r = n.type == Type::boolean ? Interval{0.0, 1.0} : Interval{};
    iv[k] = r;
  }
  return iv;
}

}  // namespace attnlab::expr
