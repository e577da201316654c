#pragma once
// One row of the CPU layer norm, shared by layer_norm_cpu.cpp and dropout_add_layer_norm_cpu.cpp
// so that the fused op computes exactly what layer_norm computes on the same row. With centered
// false the row is not centred (mean taken as 0, the variance is the mean square): RMSNorm
// (Zhang & Sennrich 2019), y = x / sqrt(mean(x^2) + eps) * gamma.
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/row_sum.h"

namespace attnlab::detail {

using cpu::row_sum;

// y = (x - mean) * rstd * gamma + beta over one row of d > 0 values; gamma, beta may be null.
// Two passes in double: the mean, then the biased variance around it (no cancellation).
template <typename T>
inline void layer_norm_row_forward(const T* xr, const T* gamma, const T* beta, std::int64_t d, double eps,
                                   T* yr, T& mean, T& rstd, bool centered = true) {
  const double sum = centered ? row_sum(d, [&](std::int64_t j) { return static_cast<double>(xr[j]); }) : 0.0;
  const double mu = sum / static_cast<double>(d);
  const double sq = row_sum(d, [&](std::int64_t j) {
    const double c = xr[j] - mu;
    return c * c;
  });
  const double inv = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
  mean = static_cast<T>(mu);
  rstd = static_cast<T>(inv);
  const T m_t = static_cast<T>(mu);
  const T r_t = static_cast<T>(inv);
  for (std::int64_t j = 0; j < d; ++j) {
    T v = (xr[j] - m_t) * r_t;
    if (gamma) v *= gamma[j];
    if (beta) v += beta[j];
    yr[j] = v;
  }
}

// dx = rstd (g - mean_j(g) - xhat mean_j(g xhat)) with g = dy * gamma and xhat = (x - mean) rstd,
// over one row of d > 0 values (the derivation is in layer_norm.cpp); gamma may be null. Not
// centred (mu 0), the mean_j(g) term goes: the mean does not move with x (rms_norm.cpp).
template <typename T>
inline void layer_norm_row_backward(const T* xr, const T* gamma, T mu, T inv, const T* dyr, std::int64_t d,
                                    T* dxr, bool centered = true) {
  // Separate loops with and without gamma, so that none tests gamma per element.
  const auto xhat = [&](std::int64_t j) { return static_cast<double>((xr[j] - mu) * inv); };
  const auto g_gamma = [&](std::int64_t j) { return static_cast<double>(dyr[j] * gamma[j]); };
  const auto g_plain = [&](std::int64_t j) { return static_cast<double>(dyr[j]); };
  const double a = gamma ? row_sum(d, g_gamma) : row_sum(d, g_plain);
  const double b = gamma ? row_sum(d, [&](std::int64_t j) { return g_gamma(j) * xhat(j); })
                         : row_sum(d, [&](std::int64_t j) { return g_plain(j) * xhat(j); });
  const T a_t = centered ? static_cast<T>(a / static_cast<double>(d)) : T(0);
  const T b_t = static_cast<T>(b / static_cast<double>(d));
  for (std::int64_t j = 0; j < d; ++j) {
    const T g = gamma ? dyr[j] * gamma[j] : dyr[j];
    const T xhat = (xr[j] - mu) * inv;
    dxr[j] = inv * (g - a_t - xhat * b_t);
  }
}

// The parameter gradients of columns [s, e) of a [rows, d] layer norm: dgamma[j] = sum_r dy xhat,
// dbeta[j] = sum_r dy, and, when `extra` is given, extra_sum[j] = sum_r extra[r, j] (the fused op's
// bias gradient). Each sum runs over the rows in order, in double, so a caller that splits the
// columns across threads gets the same sums whatever the thread count. Null outputs are skipped.
template <typename T>
inline void layer_norm_param_grads(const T* x, const T* dy, const T* mean, const T* rstd, std::int64_t rows,
                                   std::int64_t d, std::int64_t s, std::int64_t e, T* dgamma, T* dbeta,
                                   const T* extra = nullptr, T* extra_sum = nullptr) {
  const auto width = static_cast<std::size_t>(e - s);
  std::vector<double> acc_g(dgamma ? width : 0, 0.0), acc_b(dbeta ? width : 0, 0.0),
      acc_x(extra_sum ? width : 0, 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * d;
    const T* gr = dy + r * d;
    const T mu = mean[r];
    const T inv = rstd[r];
    for (std::int64_t j = s; j < e; ++j) {
      const auto k = static_cast<std::size_t>(j - s);
      if (dgamma) acc_g[k] += static_cast<double>(gr[j]) * static_cast<double>((xr[j] - mu) * inv);
      if (dbeta) acc_b[k] += gr[j];
      if (extra_sum) acc_x[k] += extra[r * d + j];
    }
  }
  for (std::int64_t j = s; j < e; ++j) {
    const auto k = static_cast<std::size_t>(j - s);
    if (dgamma) dgamma[j] = static_cast<T>(acc_g[k]);
    if (dbeta) dbeta[j] = static_cast<T>(acc_b[k]);
    if (extra_sum) extra_sum[j] = static_cast<T>(acc_x[k]);
  }
}

}  // namespace attnlab::detail
