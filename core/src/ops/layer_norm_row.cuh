#pragma once
// One row of the CUDA layer norm, shared by layer_norm_cuda.cu and dropout_add_layer_norm_cuda.cu
// (as layer_norm_row.h is by their CPU twins): one block per row, statistics in double. Every
// thread of the block must call these (they reduce over the block). Include cuda/block_reduce.cuh
// first.
#include <cstdint>

namespace attnlab::detail {

// A product rounded on its own, never contracted into a following add (nvcc fuses a * b + c
// into one FMA by default, the CPU rounds a * b first). The backward subtracts the row mean of
// g = dy * gamma from each g: both must be the same rounded products, else a width-1 row, whose
// exact answer is 0, gets a rounding residue times rstd.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// Given the row's mean mu: the variance around it, the statistics (written by thread 0) and
// y = (x - mean) * rstd * gamma + beta. Each thread reads and then writes only its own columns,
// so yr may alias xr.
template <typename T>
__device__ __forceinline__ void layer_norm_row_finish(const T* xr, double mu, std::int64_t d, double eps,
                                                      const T* gamma,  // (d) or null
                                                      const T* beta,   // (d) or null
                                                      T* yr, T* mean_r, T* rstd_r) {
  double sq = 0;
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const double c = static_cast<double>(xr[j]) - mu;
    sq += c * c;
  }
  const double inv = 1.0 / sqrt(cuda::block_reduce(sq, cuda::SumOp{}, 0.0) / static_cast<double>(d) + eps);
  if (threadIdx.x == 0) {
    *mean_r = static_cast<T>(mu);
    *rstd_r = static_cast<T>(inv);
  }
  const T m_t = static_cast<T>(mu);
  const T r_t = static_cast<T>(inv);
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    T v = (xr[j] - m_t) * r_t;
    if (gamma) v *= gamma[j];
    if (beta) v += beta[j];
    yr[j] = v;
  }
}

// The two row means of the backward, mean_j(g) and mean_j(g xhat) with g = dy * gamma and
// xhat = (x - mu) * inv, so that dx_j = inv (g_j - a - xhat_j b). Not centred (RMSNorm), a is 0.
template <typename T>
struct RowGradMeans {
  T a, b;
};
template <typename T>
__device__ __forceinline__ RowGradMeans<T> layer_norm_row_grad_means(const T* xr, const T* gr, const T* gamma, T mu,
                                                                     T inv, std::int64_t d, bool centered = true) {
  double a = 0, b = 0;
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const double g = static_cast<double>(gamma ? mul_rn(gr[j], gamma[j]) : gr[j]);
    a += g;
    b += g * static_cast<double>((xr[j] - mu) * inv);
  }
  const double a_sum = cuda::block_reduce(a, cuda::SumOp{}, 0.0);  // every thread takes part in the reduction
  const T a_t = centered ? static_cast<T>(a_sum / static_cast<double>(d)) : T(0);
  const T b_t = static_cast<T>(cuda::block_reduce(b, cuda::SumOp{}, 0.0) / static_cast<double>(d));
  return {a_t, b_t};
}

}  // namespace attnlab::detail
