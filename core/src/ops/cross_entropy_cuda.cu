// CUDA kernels of cross_entropy (see cross_entropy.cpp for the derivation): the targets checked
// and counted on the device (cross_entropy_check_kernels.cuh), one block per row for the
// log-sum-exp and the row loss, then one block adds the row losses in a fixed order (no atomics);
// the backward is elementwise. A target the check found bad is read nowhere: its row loss is NaN.
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "cuda/check.cuh"
#include "ops/cross_entropy_check_kernels.cuh"
#include "ops/cross_entropy_cuda.h"

namespace attnlab::detail::cuda_cross_entropy {
namespace {

using cuda::block_reduce;
using cuda::device_exp;
using cuda::kRowThreads;

// Kept row: lse = m + log sum_k exp(x_k - m), loss = lse - (1 - eps) x_t - (eps / V) sum_k x_k.
template <typename T, typename I>
__global__ void row_kernel(const T* logits,   // (n, v)
                           const I* targets,  // (n)
                           std::int64_t v, double eps, std::int64_t ignore_index,
                           T* lse,            // (n)
                           double* row_loss) {  // (n)
  const std::int64_t r = blockIdx.x;
  const auto t = static_cast<std::int64_t>(targets[r]);
  if (t == ignore_index) {
    if (threadIdx.x == 0) {
      lse[r] = T(0);
      row_loss[r] = 0.0;
    }
    return;
  }
  if (t < 0 || t >= v) {  // recorded by the check; nothing out of the row is read
    if (threadIdx.x == 0) {
      lse[r] = T(0);
      row_loss[r] = NAN;
    }
    return;
  }
  const T* x = logits + r * v;
  T m = x[0];
  for (std::int64_t k = threadIdx.x; k < v; k += blockDim.x) m = cuda::MaxOp{}(m, x[k]);
  m = block_reduce(m, cuda::MaxOp{}, x[0]);
  double sum_exp = 0, sum_x = 0;
  for (std::int64_t k = threadIdx.x; k < v; k += blockDim.x) {
    sum_exp += static_cast<double>(device_exp(x[k] - m));
    sum_x += static_cast<double>(x[k]);
  }
  sum_exp = block_reduce(sum_exp, cuda::SumOp{}, 0.0);
  sum_x = block_reduce(sum_x, cuda::SumOp{}, 0.0);
  if (threadIdx.x == 0) {
    const double l = static_cast<double>(m) + ::log(sum_exp);
    lse[r] = static_cast<T>(l);
    row_loss[r] = l - (1.0 - eps) * static_cast<double>(x[t]) - (eps / static_cast<double>(v)) * sum_x;
  }
}

// One block: thread i adds rows i, i + blockDim.x, ... in order, then the block reduction.
template <typename T>
__global__ void total_kernel(const double* row_loss,  // (n)
                             std::int64_t n,
                             T* loss_sum) {           // (1)
  double acc = 0;
  for (std::int64_t r = threadIdx.x; r < n; r += blockDim.x) acc += row_loss[r];
  acc = block_reduce(acc, cuda::SumOp{}, 0.0);
  if (threadIdx.x == 0) loss_sum[0] = static_cast<T>(acc);
}

// dlogits[r, k] = g (exp(x - lse_r) - eps / V) - g (1 - eps) [k == t_r]; 0 for ignored rows.
template <typename T, typename I>
__global__ void backward_kernel(const T* logits,   // (n, v)
                                const I* targets,  // (n)
                                const T* lse,      // (n)
                                std::int64_t total, std::int64_t v, T smooth, T on_target,
                                std::int64_t ignore_index,
                                const T* g_in,     // (1): the incoming gradient of loss_sum
                                T* dlogits) {      // (n, v)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const std::int64_t r = i / v;
  const std::int64_t k = i % v;
  const auto t = static_cast<std::int64_t>(targets[r]);
  if (t == ignore_index) {
    dlogits[i] = T(0);
    return;
  }
  const T g = *g_in;
  T d = g * (device_exp(logits[i] - lse[r]) - smooth);
  if (k == t) d -= g * on_target;
  dlogits[i] = d;
}

}  // namespace

template <typename I>
void check_targets(const I* targets, std::int64_t n, std::int64_t v, std::int64_t ignore_index,
                   std::uint64_t* check, std::int64_t* kept, int device, cudaStream_t stream) {
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  ATTNLAB_CUDA_CHECK(cudaMemsetAsync(kept, 0, sizeof(std::int64_t), stream));
  if (n == 0) return;
  using cuda::cross_entropy_kernels::kCheckThreads;
  const std::int64_t wanted = (n + kCheckThreads - 1) / kCheckThreads;
  const auto blocks = static_cast<unsigned>(wanted < 1024 ? wanted : 1024);
  const index_check::Rule rule{.lo = 0, .hi = v, .has_skip = true, .skip = ignore_index};
  cuda::cross_entropy_kernels::check_targets_kernel<I><<<blocks, kCheckThreads, 0, stream>>>(
      targets, n, rule, check, reinterpret_cast<unsigned long long*>(kept));
  ATTNLAB_CUDA_CHECK_LAUNCH();
}
template void check_targets<std::int32_t>(const std::int32_t*, std::int64_t, std::int64_t, std::int64_t,
                                          std::uint64_t*, std::int64_t*, int, cudaStream_t);
template void check_targets<std::int64_t>(const std::int64_t*, std::int64_t, std::int64_t, std::int64_t,
                                          std::uint64_t*, std::int64_t*, int, cudaStream_t);

template <typename T, typename I>
void forward(const T* logits, const I* targets, std::int64_t n, std::int64_t v, double eps,
             std::int64_t ignore_index, T* lse, double* row_loss, T* loss_sum, int device,
             cudaStream_t stream) {
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  if (n > 0 && v > 0) {
    row_kernel<T, I><<<static_cast<unsigned>(n), kRowThreads, 0, stream>>>(logits, targets, v, eps,
                                                                           ignore_index, lse, row_loss);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  }
  total_kernel<T><<<1, kRowThreads, 0, stream>>>(row_loss, v > 0 ? n : 0, loss_sum);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

template <typename T, typename I>
void backward(const T* logits, const I* targets, const T* lse, std::int64_t n, std::int64_t v, double eps,
              std::int64_t ignore_index, const T* g, T* dlogits, int device, cudaStream_t stream) {
  const std::int64_t total = n * v;
  if (total == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  const T smooth = static_cast<T>(eps / static_cast<double>(v));
  const T on_target = static_cast<T>(1.0 - eps);
  const auto blocks = static_cast<unsigned>((total + kRowThreads - 1) / kRowThreads);
  backward_kernel<T, I><<<blocks, kRowThreads, 0, stream>>>(logits, targets, lse, total, v, smooth, on_target,
                                                            ignore_index, g, dlogits);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

#define ATTNLAB_INSTANTIATE(T, I)                                                                     \
  template void forward<T, I>(const T*, const I*, std::int64_t, std::int64_t, double, std::int64_t, T*, \
                              double*, T*, int, cudaStream_t);                                        \
  template void backward<T, I>(const T*, const I*, const T*, std::int64_t, std::int64_t, double,       \
                               std::int64_t, const T*, T*, int, cudaStream_t);
ATTNLAB_INSTANTIATE(float, std::int32_t)
ATTNLAB_INSTANTIATE(float, std::int64_t)
ATTNLAB_INSTANTIATE(double, std::int32_t)
ATTNLAB_INSTANTIATE(double, std::int64_t)
#undef ATTNLAB_INSTANTIATE

}  // namespace attnlab::detail::cuda_cross_entropy
