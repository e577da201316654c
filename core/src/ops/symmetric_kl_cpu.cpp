// The fused CPU kernels of the symmetric KL divergence (symmetric_kl_kernels.h).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/exp_rows.h"
#include "cpu/parallel.h"
#include "cpu/row_sum.h"
#include "ops/op_util.h"
#include "ops/symmetric_kl_kernels.h"

namespace attnlab::detail {
namespace {

// log sum_k exp(x_k), stable: every exponent is taken relative to the row's maximum.
template <typename T>
double row_lse(const T* x, std::int64_t v) {
  if constexpr (std::is_same_v<T, float>) {
    const float m = cpu::max_row(x, v);
    return static_cast<double>(m) + std::log(cpu::sum_exp(x, m, v));
  } else {
    const double m = *std::max_element(x, x + v);
    const double s = cpu::row_sum(v, [&](std::int64_t k) { return std::exp(x[k] - m); });
    return m + std::log(s);
  }
}

// out[k] = exp(x[k] - lse): the row's probabilities.
template <typename T>
void row_probs(const T* x, double lse, T* out, std::int64_t v) {
  if constexpr (std::is_same_v<T, float>)
    cpu::exp_affine(x, static_cast<float>(lse), 1.0f, 0.0f, out, v);
  else
    for (std::int64_t k = 0; k < v; ++k) out[k] = std::exp(x[k] - lse);
}

template <typename I>
bool kept(const I* targets, std::int64_t n, std::int64_t ignore_index) {
  return static_cast<std::int64_t>(targets[n]) != ignore_index;
}

}  // namespace

void symmetric_kl_forward_cpu(const Tensor& logits_a, const Tensor& logits_b, const Tensor& targets,
                              std::int64_t ignore_index, Tensor& stats, Tensor& loss_sum) {
  dispatch_float("symmetric_kl", logits_a.dtype(), [&](auto ftag) {
    using T = typename decltype(ftag)::type;
    dispatch_index("symmetric_kl", targets.dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      const T* pa = logits_a.data<T>();
      const T* pb = logits_b.data<T>();
      const I* pt = targets.data<I>();
      T* ps = stats.data<T>();
      const std::int64_t rows = logits_a.dim(0), v = logits_a.dim(1);
      std::vector<double> row_loss(static_cast<std::size_t>(rows), 0.0);
      cpu::parallel_for(rows, cpu::row_grain(2 * v), [&](std::int64_t s, std::int64_t e) {
        std::vector<T> p(static_cast<std::size_t>(v)), r(static_cast<std::size_t>(v));
        for (std::int64_t n = s; n < e; ++n) {
          T* st = ps + n * 4;
          if (!kept(pt, n, ignore_index)) {
            std::fill(st, st + 4, T(0));
            continue;
          }
          const T* xa = pa + n * v;
          const T* xb = pb + n * v;
          const double lse_a = row_lse(xa, v), lse_b = row_lse(xb, v);
          row_probs(xa, lse_a, p.data(), v);
          row_probs(xb, lse_b, r.data(), v);
          // D_k = log p_k - log r_k = (xa_k - xb_k) - (lse_a - lse_b).
          const double c = lse_a - lse_b;
          const auto d = [&](std::int64_t k) {
            return static_cast<double>(xa[k]) - static_cast<double>(xb[k]) - c;
          };
          const double ep = cpu::row_sum(v, [&](std::int64_t k) { return static_cast<double>(p[k]) * d(k); });
          const double er = cpu::row_sum(v, [&](std::int64_t k) { return static_cast<double>(r[k]) * d(k); });
          st[0] = static_cast<T>(lse_a);
          st[1] = static_cast<T>(lse_b);
          st[2] = static_cast<T>(ep);
          st[3] = static_cast<T>(er);
          row_loss[static_cast<std::size_t>(n)] = ep - er;
        }
      });
      double total = 0;
      for (double l : row_loss) total += l;
      loss_sum.data<T>()[0] = static_cast<T>(total);
    });
  });
}

void symmetric_kl_backward_cpu(const Tensor& logits_a, const Tensor& logits_b, const Tensor& targets,
                               std::int64_t ignore_index, const Tensor& stats, const Tensor& g, Tensor& da,
                               Tensor& db) {
  dispatch_float("symmetric_kl_backward", logits_a.dtype(), [&](auto ftag) {
    using T = typename decltype(ftag)::type;
    dispatch_index("symmetric_kl_backward", targets.dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      const T* pa = logits_a.data<T>();
      const T* pb = logits_b.data<T>();
      const I* pt = targets.data<I>();
      const T* ps = stats.data<T>();
      T* pda = da.data<T>();
      T* pdb = db.data<T>();
      const std::int64_t rows = logits_a.dim(0), v = logits_a.dim(1);
      const T gt = *g.data<T>();
      cpu::parallel_for(rows, cpu::row_grain(2 * v), [&](std::int64_t s, std::int64_t e) {
        for (std::int64_t n = s; n < e; ++n) {
          T* ga = pda + n * v;
          T* gb = pdb + n * v;
          if (!kept(pt, n, ignore_index)) {
            std::fill(ga, ga + v, T(0));
            std::fill(gb, gb + v, T(0));
            continue;
          }
          const T* xa = pa + n * v;
          const T* xb = pb + n * v;
          const T* st = ps + n * 4;
          // The probabilities go straight into the gradients' rows, then each element is turned
          // into its gradient: p (D - E_p[D]) + p - r and r (E_r[D] - D) + r - p, times g.
          row_probs(xa, static_cast<double>(st[0]), ga, v);
          row_probs(xb, static_cast<double>(st[1]), gb, v);
          const T c = st[0] - st[1], ep = st[2], er = st[3];
          for (std::int64_t k = 0; k < v; ++k) {
            const T p = ga[k], r = gb[k];
            const T d = xa[k] - xb[k] - c;
            ga[k] = gt * (p * (d - ep) + p - r);
            gb[k] = gt * (r * (er - d) + r - p);
          }
        }
      });
    });
  });
}

}  // namespace attnlab::detail
