// CUDA kernels of binary.cpp: add, sub, mul with suffix broadcasting, scale, add_inplace,
// sum_rows. One thread per element (grid-stride); sum_rows in the two deterministic passes of
// cuda/column_sums.cuh (one thread per column over all the rows left most of the GPU idle: 3 ms
// for the 25000 x 512 bias gradient of a base-model linear layer on an H200).
#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"
#include "cuda/column_sums.cuh"
#include "cuda/scratch.h"

namespace attnlab::cuda {
namespace {

// out[i] = a[i % na] op b[i % nb]: the broadcast side repeats with period na (or nb).
template <typename T>
__global__ void binary_kernel(int op,
                              const T* a, std::int64_t na,  // a: (na)
                              const T* b, std::int64_t nb,  // b: (nb)
                              T* out, std::int64_t n) {     // out: (n), n a multiple of na and nb
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const auto x = load(a, na == n ? i : i % na);
    const auto y = load(b, nb == n ? i : i % nb);
    store(out, i, op == 0 ? x + y : op == 1 ? x - y : x * y);
  }
}

template <typename T>
__global__ void scale_kernel(const T* x,  // x: (n)
                             compute_t<T> factor,
                             T* out,      // out: (n)
                             std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store(out, i, load(x, i) * factor);
}

template <typename T>
__global__ void add_inplace_kernel(T* dst,        // dst: (n)
                                   const T* src,  // src: (n)
                                   std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store(dst, i, load(dst, i) + load(src, i));
}

// cuda/column_sums.cuh's pass 1 over in: partial[by, j] = the sum of in[r, j] over block by's
// slab of rows.
template <typename T>
__global__ void column_sum_kernel(const T* in,  // in: (rows, cols)
                                  std::int64_t rows, std::int64_t cols, std::int64_t slab,
                                  compute_t<T>* partial) {  // partial: (gridDim.y, cols)
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * slab;
  const std::int64_t r1 = r0 + slab < rows ? r0 + slab : rows;
  compute_t<T> acc = 0;
  if (j < cols)
    for (std::int64_t r = r0 + threadIdx.y; r < r1; r += kSlabThreads) acc += load(in, r * cols + j);
  write_slab_sum(acc, j, cols, partial);
}

}  // namespace

void set_device(int index) { ATTNLAB_CUDA_CHECK(cudaSetDevice(index)); }

void binary_forward(int op, DType dtype, const void* a, std::int64_t na, const void* b, std::int64_t nb,
                    void* out, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("binary", dtype, [&](auto tag) {
    using T = decltype(tag);
    binary_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(a), na,
                                                           static_cast<const T*>(b), nb, static_cast<T*>(out), n);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

void scale_forward(DType dtype, const void* x, double factor, void* out, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("scale", dtype, [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                          static_cast<compute_t<T>>(factor), static_cast<T*>(out), n);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

void add_inplace(DType dtype, void* dst, const void* src, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("add_inplace", dtype, [&](auto tag) {
    using T = decltype(tag);
    add_inplace_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), n);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

void sum_rows(DType dtype, const void* in, std::int64_t rows, std::int64_t cols, void* out, cudaStream_t stream) {
  if (cols == 0) return;
  dispatch_floating("sum_rows", dtype, [&](auto tag) {
    using T = decltype(tag);
    if (rows == 0) {  // a sum over nothing
      ATTNLAB_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(cols) * sizeof(T), stream));
      return;
    }
    const SlabGrid g = slab_grid(rows, cols);
    // The partial sums are ordered on the device's stream with their reader (cuda/scratch.h).
    const DeviceScratch partial(current_device(), static_cast<std::size_t>(g.count * cols) * sizeof(compute_t<T>));
    column_sum_kernel<T><<<g.grid, g.block, 0, stream>>>(static_cast<const T*>(in), rows, cols, g.slab,
                                                         partial.as<compute_t<T>>());
    ATTNLAB_CUDA_CHECK_LAUNCH();
    sum_slabs_kernel<T><<<grid_for(cols), kThreads, 0, stream>>>(partial.as<compute_t<T>>(), g.count, cols,
                                                                 static_cast<T*>(out));
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace attnlab::cuda
