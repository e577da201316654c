#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/convert_bf16.h"
#include "cpu/exp_rows.h"
#include "cpu/parallel.h"
#include "ops/cross_entropy_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {

std::string cross_entropy_target_rule(std::int64_t vocab, std::int64_t ignore_index) {
  return fmt::format("for V = {} (targets must be in [0, {}) or equal ignore_index = {})", vocab, vocab,
                     ignore_index);
}

std::int64_t cross_entropy_check_targets_cpu(const Tensor& targets, std::int64_t vocab,
                                             std::int64_t ignore_index) {
  return dispatch_index("cross_entropy", targets.dtype(), [&](auto tag) -> std::int64_t {
    using I = typename decltype(tag)::type;
    const I* pt = targets.data<I>();
    std::int64_t kept = 0;
    for (std::int64_t n = 0; n < targets.numel(); ++n) {
      const auto t = static_cast<std::int64_t>(pt[n]);
      if (t == ignore_index) continue;
      ATTNLAB_CHECK(t >= 0 && t < vocab, "cross_entropy: target {} at position {} is out of range {}", t, n,
                    cross_entropy_target_rule(vocab, ignore_index));
      ++kept;
    }
    return kept;
  });
}

void cross_entropy_check_targets_cpu(const Tensor& targets, std::int64_t vocab, std::int64_t ignore_index,
                                     Tensor& tokens) {
  *tokens.data<std::int64_t>() = cross_entropy_check_targets_cpu(targets, vocab, ignore_index);
}

namespace {

// A row of logits as the f32 kernels read it: f32 rows where they are, bf16 rows widened into a
// buffer of the calling thread (exactly: a bf16 is the upper half of an f32).
template <typename T>
struct RowReader {
  const T* rows;
  std::int64_t v;
  const T* operator()(std::int64_t n) { return rows + n * v; }
};
template <>
struct RowReader<bf16> {
  const bf16* rows;
  std::int64_t v;
  std::vector<float> wide{};
  const float* operator()(std::int64_t n) {
    wide.resize(static_cast<std::size_t>(v));
    cpu::bf16_to_f32(reinterpret_cast<const std::uint16_t*>(rows + n * v), wide.data(), v);
    return wide.data();
  }
};

}  // namespace

void cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets, double eps,
                               std::int64_t ignore_index, Tensor& lse, Tensor& loss_sum) {
  dispatch_float_and_index("cross_entropy", logits.dtype(), targets.dtype(), [&]<typename X, typename T, typename I>() {
    const X* px = logits.data<X>();
    const I* pt = targets.data<I>();
    T* pl = lse.data<T>();
    const std::int64_t rows = logits.dim(0);
    const std::int64_t v = logits.dim(1);
    const double smooth = v > 0 ? eps / static_cast<double>(v) : 0.0;
    std::vector<double> row_loss(static_cast<std::size_t>(rows), 0.0);
    cpu::parallel_for(rows, cpu::row_grain(v), [&](std::int64_t s, std::int64_t e) {
      RowReader<X> row{px, v};
      for (std::int64_t n = s; n < e; ++n) {
        const auto t = static_cast<std::int64_t>(pt[n]);
        if (t == ignore_index) {
          pl[n] = T(0);
          continue;
        }
        const T* x = row(n);
        // Stable log-sum-exp: lse = m + log sum_k exp(x_k - m) with m = max_k x_k, so every
        // exponent is <= 0 and the largest term is exactly 1.
        T m;
        double sum_exp = 0, sum_x = 0;
        if constexpr (std::is_same_v<T, float>) {
          m = cpu::max_row(x, v);
          sum_exp = cpu::sum_exp(x, m, v);
          sum_x = cpu::sum_row(x, v);
        } else {
          m = *std::max_element(x, x + v);
          for (std::int64_t k = 0; k < v; ++k) sum_exp += static_cast<double>(std::exp(x[k] - m));
          for (std::int64_t k = 0; k < v; ++k) sum_x += static_cast<double>(x[k]);
        }
        const double l = static_cast<double>(m) + std::log(sum_exp);
        pl[n] = static_cast<T>(l);
        // -sum_k q_k (x_k - lse) with sum_k q_k = 1.
        row_loss[static_cast<std::size_t>(n)] =
            l - (1.0 - eps) * static_cast<double>(x[t]) - smooth * sum_x;
      }
    });
    double total = 0;
    for (double r : row_loss) total += r;
    loss_sum.data<T>()[0] = static_cast<T>(total);
  });
}

void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& targets, const Tensor& lse, double eps,
                                std::int64_t ignore_index, const Tensor& g, Tensor& dlogits) {
  const DType values = logits.dtype(), ids = targets.dtype();
  dispatch_float_and_index("cross_entropy_backward", values, ids, [&]<typename X, typename T, typename I>() {
    const X* px = logits.data<X>();
    const I* pt = targets.data<I>();
    const T* pl = lse.data<T>();
    X* pd = dlogits.data<X>();
    const std::int64_t rows = logits.dim(0);
    const std::int64_t v = logits.dim(1);
    const T gt = *g.data<T>();
    const T smooth = static_cast<T>(v > 0 ? eps / static_cast<double>(v) : 0.0);
    const T on_target = static_cast<T>(1.0 - eps);
    cpu::parallel_for(rows, cpu::row_grain(v), [&](std::int64_t s, std::int64_t e) {
      RowReader<X> row{px, v};
      std::vector<float> wide_d;  // bf16: the f32 row, rounded once into dlogits
      for (std::int64_t n = s; n < e; ++n) {
        X* dx = pd + n * v;
        const auto t = static_cast<std::int64_t>(pt[n]);
        if (t == ignore_index) {
          std::fill(dx, dx + v, X(0.0f));
          continue;
        }
        const T* x = row(n);
        T* d = nullptr;
        if constexpr (std::is_same_v<X, bf16>) {
          wide_d.resize(static_cast<std::size_t>(v));
          d = wide_d.data();
        } else {
          d = dx;
        }
        const T l = pl[n];
        if constexpr (std::is_same_v<T, float>)
          cpu::exp_affine(x, l, gt, smooth, d, v);
        else
          for (std::int64_t k = 0; k < v; ++k) d[k] = gt * (std::exp(x[k] - l) - smooth);
        d[t] -= gt * on_target;
        if constexpr (std::is_same_v<X, bf16>) cpu::f32_to_bf16(d, reinterpret_cast<std::uint16_t*>(dx), v);
      }
    });
  });
}

}  // namespace attnlab::detail
