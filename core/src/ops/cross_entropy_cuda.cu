// CUDA kernels of cross_entropy (see cross_entropy.cpp for the derivation): the targets checked
// and counted on the device (cross_entropy_check_kernels.cuh), one block per row for the
// log-sum-exp and the row loss, then one block adds the row losses in a fixed order (no atomics);
// the backward is elementwise. A target the check found bad is read nowhere: its row loss is NaN.
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "cuda/check.cuh"
#include "cuda/element_access.cuh"
#include "ops/cross_entropy_check_kernels.cuh"
#include "ops/cross_entropy_cuda.h"

namespace attnlab::detail::cuda_cross_entropy {
namespace {

using cuda::block_reduce;
using cuda::device_exp;
using cuda::kRowThreads;

using cuda::compute_t;
using cuda::load;
using cuda::store;

// Kept row: lse = m + log sum_k exp(x_k - m), loss = lse - (1 - eps) x_t - (eps / V) sum_k x_k.
// X the logits' element (bf16 read as f32), T = compute_t<X> the type of lse.
template <typename X, typename I>
__global__ void row_kernel(const X* logits,   // (n, v)
                           const I* targets,  // (n)
                           std::int64_t v, double eps, std::int64_t ignore_index,
                           compute_t<X>* lse,  // (n)
                           double* row_loss) {  // (n)
  using T = compute_t<X>;
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
  const X* x = logits + r * v;
  const T first = load(x, 0);
  T m = first;
  for (std::int64_t k = threadIdx.x; k < v; k += blockDim.x) m = cuda::MaxOp{}(m, load(x, k));
  m = block_reduce(m, cuda::MaxOp{}, first);
  double sum_exp = 0, sum_x = 0;
  for (std::int64_t k = threadIdx.x; k < v; k += blockDim.x) {
    const T xk = load(x, k);
    sum_exp += static_cast<double>(device_exp(xk - m));
    sum_x += static_cast<double>(xk);
  }
  sum_exp = block_reduce(sum_exp, cuda::SumOp{}, 0.0);
  sum_x = block_reduce(sum_x, cuda::SumOp{}, 0.0);
  if (threadIdx.x == 0) {
    const double l = static_cast<double>(m) + ::log(sum_exp);
    lse[r] = static_cast<T>(l);
    row_loss[r] = l - (1.0 - eps) * static_cast<double>(load(x, t)) - (eps / static_cast<double>(v)) * sum_x;
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

// dlogits[r, k] = g (exp(x - lse_r) - eps / V) - g (1 - eps) [k == t_r]; 0 for ignored rows;
// computed in T = compute_t<X> and stored in X (bf16: rounded once).
template <typename X, typename I>
__global__ void backward_kernel(const X* logits,   // (n, v)
                                const I* targets,  // (n)
                                const compute_t<X>* lse,  // (n)
                                std::int64_t total, std::int64_t v, compute_t<X> smooth, compute_t<X> on_target,
                                std::int64_t ignore_index,
                                const compute_t<X>* g_in,  // (1): the incoming gradient of loss_sum
                                X* dlogits) {      // (n, v)
  using T = compute_t<X>;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const std::int64_t r = i / v;
  const std::int64_t k = i % v;
  const auto t = static_cast<std::int64_t>(targets[r]);
  if (t == ignore_index) {
    store(dlogits, i, T(0));
    return;
  }
  const T g = *g_in;
  T d = g * (device_exp(load(logits, i) - lse[r]) - smooth);
  if (k == t) d -= g * on_target;
  store(dlogits, i, d);
}

// The kernels' element type of a host element type: attnlab::bf16 is cuda::bf16_bits.
template <typename X>
struct device_element {
  using type = X;
};
template <>
struct device_element<bf16> {
  using type = cuda::bf16_bits;
};
template <typename X>
const typename device_element<X>::type* on_device(const X* p) {
  return reinterpret_cast<const typename device_element<X>::type*>(p);
}
template <typename X>
typename device_element<X>::type* on_device(X* p) {
  return reinterpret_cast<typename device_element<X>::type*>(p);
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

template <typename X, typename T, typename I>
void forward(const X* logits, const I* targets, std::int64_t n, std::int64_t v, double eps,
             std::int64_t ignore_index, T* lse, double* row_loss, T* loss_sum, int device,
             cudaStream_t stream) {
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  if (n > 0 && v > 0) {
    row_kernel<<<static_cast<unsigned>(n), kRowThreads, 0, stream>>>(on_device(logits), targets, v, eps,
                                                                     ignore_index, lse, row_loss);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  }
  total_kernel<T><<<1, kRowThreads, 0, stream>>>(row_loss, v > 0 ? n : 0, loss_sum);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

template <typename X, typename T, typename I>
void backward(const X* logits, const I* targets, const T* lse, std::int64_t n, std::int64_t v, double eps,
              std::int64_t ignore_index, const T* g, X* dlogits, int device, cudaStream_t stream) {
  const std::int64_t total = n * v;
  if (total == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  const T smooth = static_cast<T>(eps / static_cast<double>(v));
  const T on_target = static_cast<T>(1.0 - eps);
  const auto blocks = static_cast<unsigned>((total + kRowThreads - 1) / kRowThreads);
  backward_kernel<<<blocks, kRowThreads, 0, stream>>>(on_device(logits), targets, lse, total, v, smooth,
                                                      on_target, ignore_index, g, on_device(dlogits));
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

#define ATTNLAB_INSTANTIATE(X, T, I)                                                                       \
  template void forward<X, T, I>(const X*, const I*, std::int64_t, std::int64_t, double, std::int64_t, T*,   \
                                 double*, T*, int, cudaStream_t);                                           \
  template void backward<X, T, I>(const X*, const I*, const T*, std::int64_t, std::int64_t, double,         \
                                  std::int64_t, const T*, X*, int, cudaStream_t);
ATTNLAB_INSTANTIATE(float, float, std::int32_t)
ATTNLAB_INSTANTIATE(float, float, std::int64_t)
ATTNLAB_INSTANTIATE(double, double, std::int32_t)
ATTNLAB_INSTANTIATE(double, double, std::int64_t)
ATTNLAB_INSTANTIATE(bf16, float, std::int32_t)
ATTNLAB_INSTANTIATE(bf16, float, std::int64_t)
#undef ATTNLAB_INSTANTIATE

}  // namespace attnlab::detail::cuda_cross_entropy
