// CUDA kernels of layer_norm and rms_norm (centered false: mean 0, no mean-of-gradient term): one block per row for the forward and for dx (two-pass mean and
// variance in double, as layer_norm_cpu.cpp); dgamma and dbeta by a two-pass column reduction
// (chunks of rows, then the chunks in order) so that the sums are deterministic without atomics.
#include "cuda/block_reduce.cuh"
#include "cuda/check.cuh"
#include "ops/layer_norm_cuda.h"
#include "ops/layer_norm_row.cuh"

namespace attnlab::detail::cuda_layer_norm {
namespace {

using cuda::block_reduce;
using cuda::kRowThreads;
using cuda::SumOp;

template <typename T>
__global__ void forward_kernel(const T* x,      // (rows, d)
                               const T* gamma,  // (d) or null
                               const T* beta,   // (d) or null
                               std::int64_t d, double eps, bool centered,
                               T* y,            // (rows, d)
                               T* mean,         // (rows)
                               T* rstd) {       // (rows)
  const std::int64_t r = blockIdx.x;
  const T* xr = x + r * d;
  T* yr = y + r * d;
  double sum = 0;
  if (centered)
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) sum += static_cast<double>(xr[j]);
  const double mu = block_reduce(sum, SumOp{}, 0.0) / static_cast<double>(d);
  layer_norm_row_finish(xr, mu, d, eps, gamma, beta, yr, mean + r, rstd + r);
}

// dx_j = rstd (g_j - mean(g) - xhat_j mean(g xhat)) with g = dy * gamma (layer_norm.cpp).
template <typename T>
__global__ void backward_dx_kernel(const T* x,      // (rows, d)
                                   const T* gamma,  // (d) or null
                                   const T* mean,   // (rows)
                                   const T* rstd,   // (rows)
                                   const T* dy,     // (rows, d)
                                   std::int64_t d, bool centered,
                                   T* dx) {         // (rows, d)
  const std::int64_t r = blockIdx.x;
  const T* xr = x + r * d;
  const T* gr = dy + r * d;
  T* dr = dx + r * d;
  const T mu = mean[r];
  const T inv = rstd[r];
  const RowGradMeans<T> means = layer_norm_row_grad_means(xr, gr, gamma, mu, inv, d, centered);
  for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const T g = gamma ? mul_rn(gr[j], gamma[j]) : gr[j];
    const T xhat = (xr[j] - mu) * inv;
    dr[j] = inv * (g - means.a - xhat * means.b);
  }
}

// Pass 1: thread (chunk c, column j) sums rows [c kRowChunk, (c + 1) kRowChunk) in order.
// gridDim.y is capped at kMaxGridY, so the chunks are strided over blockIdx.y; `chunks` is the
// real count (it fixes the layout of `partial`), not gridDim.y.
template <typename T>
__global__ void params_partial_kernel(const T* x,     // (rows, d)
                                      const T* mean,  // (rows)
                                      const T* rstd,  // (rows)
                                      const T* dy,    // (rows, d)
                                      std::int64_t rows, std::int64_t d, std::int64_t chunks,
                                      double* partial) {  // (2, chunks, d): dgamma, dbeta partials
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= d) return;
  for (std::int64_t c = blockIdx.y; c < chunks; c += gridDim.y) {
    const std::int64_t r0 = c * kRowChunk;
    const std::int64_t r1 = r0 + kRowChunk < rows ? r0 + kRowChunk : rows;
    double acc_g = 0, acc_b = 0;
    for (std::int64_t r = r0; r < r1; ++r) {
      const T g = dy[r * d + j];
      acc_g += static_cast<double>(g) * static_cast<double>((x[r * d + j] - mean[r]) * rstd[r]);
      acc_b += static_cast<double>(g);
    }
    partial[c * d + j] = acc_g;
    partial[(chunks + c) * d + j] = acc_b;
  }
}

// Pass 2: each column adds its chunk partials in chunk order.
template <typename T>
__global__ void params_final_kernel(const double* partial,  // (2, chunks, d)
                                    std::int64_t chunks, std::int64_t d,
                                    T* dgamma,               // (d) or null
                                    T* dbeta) {              // (d) or null
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= d) return;
  double g = 0, b = 0;
  for (std::int64_t c = 0; c < chunks; ++c) {
    g += partial[c * d + j];
    b += partial[(chunks + c) * d + j];
  }
  if (dgamma) dgamma[j] = static_cast<T>(g);
  if (dbeta) dbeta[j] = static_cast<T>(b);
}

unsigned column_blocks(std::int64_t d) { return static_cast<unsigned>((d + kRowThreads - 1) / kRowThreads); }

// gridDim.y and gridDim.z are limited to 65535 (gridDim.x is not).
constexpr std::int64_t kMaxGridY = 65535;

}  // namespace

template <typename T>
void forward(const T* x, const T* gamma, const T* beta, std::int64_t rows, std::int64_t d, double eps,
             bool centered, T* y, T* mean, T* rstd, int device, cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  forward_kernel<T><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, gamma, beta, d, eps, centered, y,
                                                                             mean, rstd);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void backward_dx(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy, std::int64_t rows,
                 std::int64_t d, bool centered, T* dx, int device, cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  backward_dx_kernel<T><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, gamma, mean, rstd, dy, d,
                                                                                 centered, dx);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void backward_params(const T* x, const T* mean, const T* rstd, const T* dy, std::int64_t rows,
                     std::int64_t d, double* partial, T* dgamma, T* dbeta, int device, cudaStream_t stream) {
  if (d == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  const std::int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
  if (chunks > 0) {
    // More than 65535 chunks (over 16.7M rows) would fail to launch: cap y, the kernel strides.
    const dim3 grid(column_blocks(d), static_cast<unsigned>(chunks < kMaxGridY ? chunks : kMaxGridY));
    params_partial_kernel<T><<<grid, kRowThreads, 0, stream>>>(x, mean, rstd, dy, rows, d, chunks, partial);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  }
  params_final_kernel<T><<<column_blocks(d), kRowThreads, 0, stream>>>(partial, chunks, d, dgamma, dbeta);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

#define ATTNLAB_INSTANTIATE(T)                                                                          \
  template void forward<T>(const T*, const T*, const T*, std::int64_t, std::int64_t, double, bool, T*, T*, \
                           T*, int, cudaStream_t);                                                      \
  template void backward_dx<T>(const T*, const T*, const T*, const T*, const T*, std::int64_t,           \
                               std::int64_t, bool, T*, int, cudaStream_t);                              \
  template void backward_params<T>(const T*, const T*, const T*, const T*, std::int64_t, std::int64_t,   \
                                   double*, T*, T*, int, cudaStream_t);
ATTNLAB_INSTANTIATE(float)
ATTNLAB_INSTANTIATE(double)
#undef ATTNLAB_INSTANTIATE

}  // namespace attnlab::detail::cuda_layer_norm
