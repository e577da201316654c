// CUDA kernels of softmax and log_softmax along the last axis: one block of kRowThreads threads per
// row, max and sum reduced with warp shuffles and shared memory (cuda/block_reduce.cuh). Same
// semantics as softmax_cpu.cpp: masked keys and fully masked rows give 0 (softmax) / -inf (log).
#include <math_constants.h>

#include "cuda/block_reduce.cuh"
#include "cuda/check.cuh"
#include "ops/softmax_cuda.h"

namespace attnlab::detail::cuda_softmax {
namespace {

using cuda::block_reduce;
using cuda::device_exp;
using cuda::kRowThreads;

template <typename T>
__device__ T neg_inf() { return static_cast<T>(-CUDART_INF); }

__device__ std::int64_t mask_offset(const MaskIndex& index, std::int64_t row) {
  std::int64_t offset = 0;
  for (int k = index.rank - 1; k >= 0; --k) {
    offset += (row % index.dims[k]) * index.strides[k];
    row /= index.dims[k];
  }
  return offset;
}

// z = x + mask; keys j >= limit are dropped by the causal rule (limit = cols without it).
template <typename T>
__global__ void forward_kernel(const T* x,      // (rows, cols)
                               const T* mask,   // null, or broadcast to (rows, cols) by index
                               MaskIndex index, std::int64_t cols, bool causal, std::int64_t tq, bool log,
                               T* y) {          // (rows, cols)
  const std::int64_t r = blockIdx.x;
  const T* xr = x + r * cols;
  T* yr = y + r * cols;
  const T* mr = mask ? mask + mask_offset(index, r) : nullptr;
  const std::int64_t step = index.key_step;
  std::int64_t limit = cols;
  if (causal) {
    limit = r % tq + (cols - tq) + 1;
    limit = limit < 0 ? 0 : (limit > cols ? cols : limit);
  }
  auto z = [&](std::int64_t j) { return mr ? xr[j] + mr[j * step] : xr[j]; };

  T max = neg_inf<T>();
  for (std::int64_t j = threadIdx.x; j < limit; j += blockDim.x) max = cuda::MaxOp{}(max, z(j));
  max = block_reduce(max, cuda::MaxOp{}, neg_inf<T>());
  const T fill = log ? neg_inf<T>() : T(0);
  if (!(max > neg_inf<T>())) {  // every key masked
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = fill;
    return;
  }
  double sum = 0;
  for (std::int64_t j = threadIdx.x; j < limit; j += blockDim.x) sum += static_cast<double>(device_exp(z(j) - max));
  sum = block_reduce(sum, cuda::SumOp{}, 0.0);
  if (log) {
    const T log_sum = static_cast<T>(::log(sum));
    for (std::int64_t j = threadIdx.x; j < limit; j += blockDim.x) yr[j] = (z(j) - max) - log_sum;
  } else {
    const T inv = static_cast<T>(1.0 / sum);
    for (std::int64_t j = threadIdx.x; j < limit; j += blockDim.x) yr[j] = device_exp(z(j) - max) * inv;
  }
  for (std::int64_t j = limit + threadIdx.x; j < cols; j += blockDim.x) yr[j] = fill;
}

// softmax: dx = y (dy - sum(dy y)); log_softmax: dx = dy - exp(y) sum(dy) over finite y, 0 elsewhere.
template <typename T>
__global__ void backward_kernel(const T* y,    // (rows, cols)
                                const T* dy,   // (rows, cols)
                                std::int64_t cols, bool log,
                                T* dx) {       // (rows, cols)
  const std::int64_t r = blockIdx.x;
  const T* yr = y + r * cols;
  const T* gr = dy + r * cols;
  T* dr = dx + r * cols;
  double sum = 0;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    if (log)
      sum += yr[j] == neg_inf<T>() ? 0.0 : static_cast<double>(gr[j]);
    else
      sum += static_cast<double>(gr[j]) * static_cast<double>(yr[j]);
  }
  const T s = static_cast<T>(block_reduce(sum, cuda::SumOp{}, 0.0));
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    if (log)
      dr[j] = yr[j] == neg_inf<T>() ? T(0) : gr[j] - device_exp(yr[j]) * s;
    else
      dr[j] = yr[j] * (gr[j] - s);
  }
}

}  // namespace

template <typename T>
void forward(const T* x, const T* mask, const MaskIndex& index, std::int64_t rows, std::int64_t cols,
             bool causal, std::int64_t tq, bool log, T* y, int device, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  forward_kernel<T><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, mask, index, cols, causal,
                                                                             causal ? tq : 1, log, y);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void backward(const T* y, const T* dy, std::int64_t rows, std::int64_t cols, bool log, T* dx,
              int device, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  backward_kernel<T><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(y, dy, cols, log, dx);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

#define ATTNLAB_INSTANTIATE(T)                                                                       \
  template void forward<T>(const T*, const T*, const MaskIndex&, std::int64_t, std::int64_t, bool,   \
                           std::int64_t, bool, T*, int, cudaStream_t);                               \
  template void backward<T>(const T*, const T*, std::int64_t, std::int64_t, bool, T*, int, cudaStream_t);
ATTNLAB_INSTANTIATE(float)
ATTNLAB_INSTANTIATE(double)
#undef ATTNLAB_INSTANTIATE

}  // namespace attnlab::detail::cuda_softmax
