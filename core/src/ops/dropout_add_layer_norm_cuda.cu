// CUDA kernels of dropout_add_layer_norm (the derivation is in dropout_add_layer_norm.cpp): one
// block per row for the forward and for ds/dx, with the mask from philox.h (the code the CPU runs,
// one Philox block per four elements) and the row statistics in double as in layer_norm_cuda.cu;
// dgamma, dbeta and dbias by a two-pass column reduction (chunks of rows, then the chunks in
// order), deterministic without atomics.
#include "cuda/block_reduce.cuh"
#include "cuda/check.cuh"
#include "ops/dropout_add_layer_norm_cuda.h"
#include "ops/layer_norm_row.cuh"
#include "random/philox.h"

namespace attnlab::detail::cuda_dropout_add_layer_norm {
namespace {

using cuda::block_reduce;
using cuda::kRowThreads;
using cuda::SumOp;

// Products that nvcc must not contract into a fused multiply-add with the addition that follows
// use mul_rn (layer_norm_row.cuh): the unfused ops round v * scale (dropout) and r + that (add)
// separately, and so does the CPU.

// Calls fn(j, keep) once for every column j in [0, d) of the row that starts at flat index base,
// spread over the block's threads, with keep = [philox::uniform(seed, offset, base + j) >= p]. A
// thread takes whole Philox blocks q (flat elements 4q .. 4q + 3: word w is element 4q + w, as in
// philox::uniform); the row's first and last blocks may straddle its ends, and the elements outside
// the row are skipped. With p == 0 every element is kept and no Philox block is computed.
template <typename Fn>
__device__ __forceinline__ void for_each_in_row(std::int64_t base, std::int64_t d, const Mask& mask, Fn&& fn) {
  if (mask.p == 0.0) {
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) fn(j, true);
    return;
  }
  const std::uint64_t seed = mask.seed.get();
  const std::int64_t first = base / 4;
  const std::int64_t last = (base + d - 1) / 4;
  for (std::int64_t q = first + threadIdx.x; q <= last; q += blockDim.x) {
    std::uint32_t words[4];
    philox::block_words(seed, mask.offset + static_cast<std::uint64_t>(q), words);
    for (int w = 0; w < 4; ++w) {
      const std::int64_t j = q * 4 + w - base;
      if (j >= 0 && j < d) fn(j, static_cast<double>(philox::word_to_uniform(words[w])) >= mask.p);
    }
  }
}

// s = r * alpha + (keep ? (x + bias) * scale : 0), then y = (s - mean) * rstd * gamma + beta.
template <typename T>
__global__ void forward_kernel(const T* x,         // (rows, d)
                               const T* bias,      // (d) or null
                               const T* residual,  // (rows, d)
                               const T* gamma,     // (d) or null
                               const T* beta,      // (d) or null
                               std::int64_t d, Mask mask, T scale, T alpha, bool centered, double eps,
                               T* sum,             // (rows, d); may equal y
                               T* y,               // (rows, d)
                               T* mean,            // (rows)
                               T* rstd) {          // (rows)
  const std::int64_t r = blockIdx.x;
  const std::int64_t base = r * d;
  double acc = 0;
  for_each_in_row(base, d, mask, [&](std::int64_t j, bool keep) {
    const std::int64_t i = base + j;
    const T v = bias ? x[i] + bias[j] : x[i];
    const T s = mul_rn(residual[i], alpha) + (keep ? mul_rn(v, scale) : T(0));
    sum[i] = s;
    acc += static_cast<double>(s);
  });
  // block_reduce starts with __syncthreads(), after which every thread sees the whole row of sum
  // written above (by other threads: the Philox blocks and the columns map to threads differently).
  const double total = block_reduce(acc, SumOp{}, 0.0);
  const double mu = centered ? total / static_cast<double>(d) : 0.0;  // RMSNorm: no centring
  // y may alias sum: layer_norm_row_finish reads and writes each column in the same thread.
  layer_norm_row_finish(sum + base, mu, d, eps, gamma, beta, y + base, mean + r, rstd + r);
}

// ds = rstd (g - mean(g) - shat mean(g shat)) with g = dy * gamma, shat = (s - mean) * rstd;
// dx = keep ? ds * scale : 0.
template <typename T>
__global__ void backward_rows_kernel(const T* sum,    // (rows, d)
                                     const T* gamma,  // (d) or null
                                     const T* mean,   // (rows)
                                     const T* rstd,   // (rows)
                                     const T* dy,     // (rows, d)
                                     const T* ds_extra,  // (rows, d) or null: added to ds
                                     std::int64_t d, Mask mask, T scale, bool centered,
                                     T* ds,           // (rows, d)
                                     T* dx) {         // (rows, d) or null
  const std::int64_t r = blockIdx.x;
  const std::int64_t base = r * d;
  const T mu = mean[r];
  const T inv = rstd[r];
  const RowGradMeans<T> means = layer_norm_row_grad_means(sum + base, dy + base, gamma, mu, inv, d, centered);
  const Mask row_mask = dx ? mask : Mask{0.0, {}, 0};  // no Philox blocks when dx is not wanted
  for_each_in_row(base, d, row_mask, [&](std::int64_t j, bool keep) {
    const std::int64_t i = base + j;
    const T g = gamma ? mul_rn(dy[i], gamma[j]) : dy[i];
    const T shat = (sum[i] - mu) * inv;
    const T ln = inv * (g - means.a - shat * means.b);
    const T dsi = ds_extra ? ds_extra[i] + ln : ln;
    ds[i] = dsi;
    if (dx) dx[i] = keep ? mul_rn(dsi, scale) : T(0);
  });
}

// Pass 1: thread (column j, chunk c) sums rows [c kRowChunk, (c + 1) kRowChunk) in order; a block
// row of the grid takes chunks blockIdx.y, blockIdx.y + gridDim.y, ... (gridDim.y <= 65535).
template <typename T>
__global__ void params_partial_kernel(const T* sum,   // (rows, d)
                                      const T* mean,  // (rows)
                                      const T* rstd,  // (rows)
                                      const T* dy,    // (rows, d)
                                      const T* dx,    // (rows, d) or null
                                      std::int64_t rows, std::int64_t d, std::int64_t chunks,
                                      double* partial) {  // (3, chunks, d): dgamma, dbeta, dbias
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= d) return;
  for (std::int64_t c = blockIdx.y; c < chunks; c += gridDim.y) {
    const std::int64_t r0 = c * kRowChunk;
    const std::int64_t r1 = r0 + kRowChunk < rows ? r0 + kRowChunk : rows;
    double acc_g = 0, acc_b = 0, acc_x = 0;
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t i = r * d + j;
      const T g = dy[i];
      acc_g += static_cast<double>(g) * static_cast<double>((sum[i] - mean[r]) * rstd[r]);
      acc_b += static_cast<double>(g);
      if (dx) acc_x += static_cast<double>(dx[i]);
    }
    partial[c * d + j] = acc_g;
    partial[(chunks + c) * d + j] = acc_b;
    partial[(2 * chunks + c) * d + j] = acc_x;
  }
}

// Pass 2: each column adds its chunk partials in chunk order.
template <typename T>
__global__ void params_final_kernel(const double* partial,  // (3, chunks, d)
                                    std::int64_t chunks, std::int64_t d,
                                    T* dgamma,               // (d) or null
                                    T* dbeta,                // (d) or null
                                    T* dbias) {              // (d) or null
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= d) return;
  double g = 0, b = 0, x = 0;
  for (std::int64_t c = 0; c < chunks; ++c) {
    g += partial[c * d + j];
    b += partial[(chunks + c) * d + j];
    x += partial[(2 * chunks + c) * d + j];
  }
  if (dgamma) dgamma[j] = static_cast<T>(g);
  if (dbeta) dbeta[j] = static_cast<T>(b);
  if (dbias) dbias[j] = static_cast<T>(x);
}

unsigned column_blocks(std::int64_t d) { return static_cast<unsigned>((d + kRowThreads - 1) / kRowThreads); }

// One block per row: the grid's x extent.
unsigned row_blocks(std::int64_t rows) {
  if (rows > 0x7fffffff)
    cuda::throw_message("dropout_add_layer_norm: " + std::to_string(rows) +
                        " rows exceed the CUDA grid (at most 2^31 - 1 rows)");
  return static_cast<unsigned>(rows);
}

}  // namespace

template <typename T>
void forward(const T* x, const T* bias, const T* residual, const T* gamma, const T* beta, std::int64_t rows,
             std::int64_t d, Mask mask, double residual_scale, bool centered, double eps, T* sum, T* y, T* mean,
             T* rstd, int device, cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  const T scale = static_cast<T>(1.0 / (1.0 - mask.p));  // as dropout_cpu.cpp
  forward_kernel<T><<<row_blocks(rows), kRowThreads, 0, stream>>>(
      x, bias, residual, gamma, beta, d, mask, scale, static_cast<T>(residual_scale), centered, eps, sum, y, mean,
      rstd);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void backward_rows(const T* sum, const T* gamma, const T* mean, const T* rstd, const T* dy, std::int64_t rows,
                   const T* ds_extra, std::int64_t d, Mask mask, bool centered, T* ds, T* dx, int device,
                   cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  const T scale = static_cast<T>(1.0 / (1.0 - mask.p));
  backward_rows_kernel<T><<<row_blocks(rows), kRowThreads, 0, stream>>>(sum, gamma, mean, rstd, dy, ds_extra, d,
                                                                        mask, scale, centered, ds, dx);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void backward_params(const T* sum, const T* mean, const T* rstd, const T* dy, const T* dx, std::int64_t rows,
                     std::int64_t d, double* partial, T* dgamma, T* dbeta, T* dbias, int device,
                     cudaStream_t stream) {
  if (d == 0 || (!dgamma && !dbeta && !dbias)) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  const std::int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
  if (chunks > 0) {
    const dim3 grid(column_blocks(d), static_cast<unsigned>(chunks < 65535 ? chunks : 65535));
    params_partial_kernel<T><<<grid, kRowThreads, 0, stream>>>(sum, mean, rstd, dy, dx, rows, d, chunks, partial);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  }
  params_final_kernel<T><<<column_blocks(d), kRowThreads, 0, stream>>>(partial, chunks, d, dgamma, dbeta, dbias);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

#define ATTNLAB_INSTANTIATE(T)                                                                               \
  template void forward<T>(const T*, const T*, const T*, const T*, const T*, std::int64_t, std::int64_t, Mask, \
                           double, bool, double, T*, T*, T*, T*, int, cudaStream_t);                          \
  template void backward_rows<T>(const T*, const T*, const T*, const T*, const T*, std::int64_t, const T*,   \
                                 std::int64_t, Mask, bool, T*, T*, int, cudaStream_t);                        \
  template void backward_params<T>(const T*, const T*, const T*, const T*, const T*, std::int64_t,             \
                                   std::int64_t, double*, T*, T*, T*, int, cudaStream_t);
ATTNLAB_INSTANTIATE(float)
ATTNLAB_INSTANTIATE(double)
#undef ATTNLAB_INSTANTIATE

}  // namespace attnlab::detail::cuda_dropout_add_layer_norm
