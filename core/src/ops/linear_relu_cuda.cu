// CUDA kernels of linear_relu (linear.cpp).
//
// Forward: one cuBLASLt matmul with the RELU_BIAS epilogue (matmul_lt_cuda.cu's gemm_lt), so the
// output is written once, already rectified. Where cuBLASLt has no algorithm (and for f64, which
// it is not asked for), linear's own path (gemm_bias: the bias epilogue, or the broadcast and an
// accumulating GEMM) and then the relu kernel of activation_cuda.cu in place.
//
// Backward: dz = dy * [y > 0] and db = sum over the rows of dz, in one pass over dy and y by the
// kernels below. cuBLASLt's DRELU_BGRAD epilogue computes the same two things, but only as the
// epilogue of the GEMM that produces dy, reading a bit mask that a RELU_AUX_BIAS forward wrote
// into an extra buffer. In the feed-forward network dy is not a GEMM's output: W2's input gradient
// passes through the hidden dropout's backward first (and a caller may put anything between), so
// there is no GEMM of ours to attach the epilogue to; and the aux mask would be one more buffer
// per layer while the saved output already holds the mask (y > 0). So: a kernel of our own.
//
// The column sums are deterministic, in the two passes of cuda/column_sums.cuh (as sum_rows, so
// that db is linear's bias gradient to the bit).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/context.h"
#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"
#include "cuda/column_sums.cuh"
#include "cuda/scratch.h"
#include "ops/linear_relu_cuda.h"
#include "ops/matmul_cuda.h"

namespace attnlab::cuda {
namespace {

// Block (bx, by) covers columns j = 32 bx + tx (tx < 32) of the rows [by slab, min(rows, (by + 1)
// slab)); thread (tx, ty) takes the rows by slab + ty, + 8, + 16, ... of its column:
//   dz[r, j] = dy[r, j] * [y[r, j] > 0]
// With partial not null, the block also writes partial[by, j] = the sum of its dz[., j]
// (cuda/column_sums.cuh's pass 1).
template <typename T>
__global__ void relu_mask_kernel(const T* y,    // y: (rows, cols), the saved relu output
                                 const T* dy,   // dy: (rows, cols)
                                 std::int64_t rows, std::int64_t cols, std::int64_t slab,
                                 T* dz,                    // dz: (rows, cols)
                                 compute_t<T>* partial) {  // partial: (gridDim.y, cols), or null
  using C = compute_t<T>;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * slab;
  const std::int64_t r1 = r0 + slab < rows ? r0 + slab : rows;
  C acc = 0;
  if (j < cols) {
    for (std::int64_t r = r0 + threadIdx.y; r < r1; r += kSlabThreads) {
      const std::int64_t i = r * cols + j;
      // relu's derivative as activation_cuda.cu writes it: dy * 1 or dy * 0.
      const C g = load(dy, i) * (load(y, i) > C(0) ? C(1) : C(0));
      store(dz, i, g);
      acc += g;  // (bf16 dz: the sum takes the f32 values before rounding)
    }
  }
  if (partial == nullptr) return;  // the same for the whole block: no thread waits below alone
  write_slab_sum(acc, j, cols, partial);
}

template <typename T>
void launch_relu_mask(int device_index, const T* y, const T* dy, std::int64_t rows, std::int64_t cols, T* dz,
                      T* db, cudaStream_t stream) {
  if (cols == 0) return;
  if (rows == 0) {  // no rows: db is a sum over nothing
    if (db) ATTNLAB_CUDA_CHECK(cudaMemsetAsync(db, 0, static_cast<std::size_t>(cols) * sizeof(T), stream));
    return;
  }
  const SlabGrid g = slab_grid(rows, cols);
  if (db == nullptr) {
    relu_mask_kernel<T><<<g.grid, g.block, 0, stream>>>(y, dy, rows, cols, g.slab, dz, nullptr);
    ATTNLAB_CUDA_CHECK_LAUNCH();
    return;
  }
  // The partial sums live until sum_slabs_kernel has read them; the scratch block may go back to
  // the allocator before that, since all of it is ordered on this stream (cuda/scratch.h).
  const DeviceScratch partial(device_index, static_cast<std::size_t>(g.count * cols) * sizeof(compute_t<T>));
  relu_mask_kernel<T><<<g.grid, g.block, 0, stream>>>(y, dy, rows, cols, g.slab, dz, partial.as<compute_t<T>>());
  ATTNLAB_CUDA_CHECK_LAUNCH();
  sum_slabs_kernel<T><<<grid_for(cols), kThreads, 0, stream>>>(partial.as<compute_t<T>>(), g.count, cols, db);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gemm_bias_relu(const detail::GemmSpec& spec, DType out_dtype, int device_index, const void* a, const void* b,
                    const void* bias, void* out) {
  const LtEpilogue epilogue = bias ? LtEpilogue::relu_bias : LtEpilogue::relu;
  if (out_dtype == DType::f32 && gemm_lt(spec, epilogue, device_index, a, b, bias, out)) return;
  if (bias)
    gemm_bias(spec, out_dtype, device_index, a, b, bias, out);
  else
    gemm(spec, out_dtype, device_index, a, b, out);
  const Context& ctx = Context::get(device_index);
  ctx.make_current();
  // relu in place: the kernel reads and writes element i in the same thread.
  activation_forward(/*relu*/ 0, out_dtype, out, out, spec.batch * spec.m * spec.n, ctx.stream());
}

void relu_mask_backward(DType dtype, int device_index, const void* y, const void* dy, std::int64_t rows,
                        std::int64_t cols, void* dz, void* db) {
  const Context& ctx = Context::get(device_index);
  ctx.make_current();
  dispatch_floating("linear_relu backward", dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_relu_mask<T>(device_index, static_cast<const T*>(y), static_cast<const T*>(dy), rows, cols,
                        static_cast<T*>(dz), static_cast<T*>(db), ctx.stream());
  });
}

}  // namespace attnlab::cuda
