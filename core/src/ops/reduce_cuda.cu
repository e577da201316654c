// CUDA kernels of sum and mean. Deterministic: every sum is formed in an order fixed by the shape
// (chunks reduced in a block, then the chunks in order; or one thread per output walking n in
// order), in double, with no atomics. The order differs from reduce_cpu.cpp, so results may
// differ from the CPU in the last bits.
#include "cuda/block_reduce.cuh"
#include "cuda/check.cuh"
#include "ops/reduce_cuda.h"

namespace attnlab::detail::cuda_reduce {
namespace {

using cuda::block_reduce;
using cuda::kRowThreads;

// Pass 1 (inner == 1): block o * chunks + c sums x[o, c kChunk .. (c + 1) kChunk).
template <typename T>
__global__ void chunk_kernel(const T* x,  // (outer, n)
                             std::int64_t n, std::int64_t chunks,
                             double* partial) {  // (outer, chunks)
  const std::int64_t c = blockIdx.x % chunks;
  const std::int64_t o = blockIdx.x / chunks;
  const std::int64_t begin = c * kChunk;
  const std::int64_t end = begin + kChunk < n ? begin + kChunk : n;
  const T* row = x + o * n;
  double acc = 0;
  for (std::int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) acc += static_cast<double>(row[k]);
  acc = block_reduce(acc, cuda::SumOp{}, 0.0);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// Pass 2: out[o] = scale * sum of the chunk partials of row o, in chunk order.
template <typename T>
__global__ void chunks_total_kernel(const double* partial,  // (outer, chunks)
                                    std::int64_t outer, std::int64_t chunks, double scale,
                                    T* out) {               // (outer)
  const std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (o >= outer) return;
  double acc = 0;
  for (std::int64_t c = 0; c < chunks; ++c) acc += partial[o * chunks + c];
  out[o] = static_cast<T>(acc * scale);
}

// inner > 1: one thread per output (o, j) walks k = 0..n-1 (consecutive threads read consecutive j).
template <typename T>
__global__ void strided_kernel(const T* x,  // (outer, n, inner)
                               std::int64_t outer, std::int64_t n, std::int64_t inner, double scale,
                               T* out) {    // (outer, inner)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= outer * inner) return;
  const std::int64_t o = i / inner;
  const std::int64_t j = i % inner;
  const T* p = x + o * n * inner + j;
  double acc = 0;
  for (std::int64_t k = 0; k < n; ++k) acc += static_cast<double>(p[k * inner]);
  out[i] = static_cast<T>(acc * scale);
}

template <typename T>
__global__ void backward_kernel(const T* g,  // (outer, inner)
                                std::int64_t total, std::int64_t n, std::int64_t inner, T scale,
                                T* dx) {     // (outer, n, inner)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const std::int64_t o = i / (n * inner);
  const std::int64_t j = i % inner;
  dx[i] = g[o * inner + j] * scale;
}

unsigned blocks_for(std::int64_t count) { return static_cast<unsigned>((count + kRowThreads - 1) / kRowThreads); }

}  // namespace

template <typename T>
void sum(const T* x, std::int64_t outer, std::int64_t n, std::int64_t inner, double scale, double* partial,
         T* out, int device, cudaStream_t stream) {
  if (outer * inner == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  if (inner == 1) {
    const std::int64_t chunks = (n + kChunk - 1) / kChunk;
    if (chunks > 0) {
      chunk_kernel<T><<<static_cast<unsigned>(outer * chunks), kRowThreads, 0, stream>>>(x, n, chunks, partial);
      ATTNLAB_CUDA_CHECK_LAUNCH();
    }
    chunks_total_kernel<T><<<blocks_for(outer), kRowThreads, 0, stream>>>(partial, outer, chunks, scale, out);
    ATTNLAB_CUDA_CHECK_LAUNCH();
    return;
  }
  strided_kernel<T><<<blocks_for(outer * inner), kRowThreads, 0, stream>>>(x, outer, n, inner, scale, out);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void sum_backward(const T* g, std::int64_t outer, std::int64_t n, std::int64_t inner, double scale, T* dx,
                  int device, cudaStream_t stream) {
  const std::int64_t total = outer * n * inner;
  if (total == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  backward_kernel<T><<<blocks_for(total), kRowThreads, 0, stream>>>(g, total, n, inner, static_cast<T>(scale),
                                                                    dx);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

#define ATTNLAB_INSTANTIATE(T)                                                                      \
  template void sum<T>(const T*, std::int64_t, std::int64_t, std::int64_t, double, double*, T*, int, \
                       cudaStream_t);                                                               \
  template void sum_backward<T>(const T*, std::int64_t, std::int64_t, std::int64_t, double, T*, int, \
                                cudaStream_t);
ATTNLAB_INSTANTIATE(float)
ATTNLAB_INSTANTIATE(double)
#undef ATTNLAB_INSTANTIATE

}  // namespace attnlab::detail::cuda_reduce
