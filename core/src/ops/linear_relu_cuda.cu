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
// The column sums are deterministic: block (bx, by) sums its slab of rows for 32 columns in a
// fixed order (each thread its rows in order, then the 8 thread rows in order) into
// partial[by, :], and a second kernel adds the slabs in order. The order differs from the CPU's
// (rows one after the other), so f32 results agree to rounding, not to the bit.
//
// Untested on a GPU so far; tests/cuda compares everything with the CPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/context.h"
#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"
#include "cuda/scratch.h"
#include "ops/linear_relu_cuda.h"
#include "ops/matmul_cuda.h"

namespace attnlab::cuda {
namespace {

constexpr int kColTile = 32;               // columns per block: threadIdx.x, one warp, coalesced rows
constexpr int kRowThreads = 8;             // thread rows per block: threadIdx.y
constexpr std::int64_t kSlabRows = 64;     // rows per block (at least; more when gridDim.y would overflow)
constexpr std::int64_t kMaxSlabs = 65535;  // gridDim.y limit

// Block (bx, by) covers columns j = 32 bx + tx (tx < 32) of the rows [by slab, min(rows, (by + 1)
// slab)); thread (tx, ty) takes the rows by slab + ty, + 8, + 16, ... of its column:
//   dz[r, j] = dy[r, j] * [y[r, j] > 0]
// With partial not null, the block also writes partial[by, j] = the sum of its dz[., j]: each
// thread sums its rows in order, then thread row 0 adds the 8 thread sums in ty order.
template <typename T>
__global__ void relu_mask_kernel(const T* y,    // y: (rows, cols), the saved relu output
                                 const T* dy,   // dy: (rows, cols)
                                 std::int64_t rows, std::int64_t cols, std::int64_t slab,
                                 T* dz,                    // dz: (rows, cols)
                                 compute_t<T>* partial) {  // partial: (gridDim.y, cols), or null
  using C = compute_t<T>;
  __shared__ C sums[kRowThreads][kColTile];
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * slab;
  const std::int64_t r1 = r0 + slab < rows ? r0 + slab : rows;
  C acc = 0;
  if (j < cols) {
    for (std::int64_t r = r0 + threadIdx.y; r < r1; r += kRowThreads) {
      const std::int64_t i = r * cols + j;
      // relu's derivative as activation_cuda.cu writes it: dy * 1 or dy * 0.
      const C g = load(dy, i) * (load(y, i) > C(0) ? C(1) : C(0));
      store(dz, i, g);
      acc += g;  // (bf16 dz: the sum takes the f32 values before rounding)
    }
  }
  if (partial == nullptr) return;  // the same for the whole block: no thread waits below alone
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    C s = 0;
    for (int t = 0; t < kRowThreads; ++t) s += sums[t][threadIdx.x];
    partial[static_cast<std::int64_t>(blockIdx.y) * cols + j] = s;
  }
}

// db[j] = sum over s < slabs of partial[s, j], in s order; one thread per column (grid-stride).
template <typename T>
__global__ void sum_slabs_kernel(const compute_t<T>* partial,  // partial: (slabs, cols)
                                 std::int64_t slabs, std::int64_t cols,
                                 T* db) {                      // db: (cols)
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < cols;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    compute_t<T> acc = 0;
    for (std::int64_t s = 0; s < slabs; ++s) acc += partial[s * cols + j];
    store(db, j, acc);
  }
}

template <typename T>
void launch_relu_mask(int device_index, const T* y, const T* dy, std::int64_t rows, std::int64_t cols, T* dz,
                      T* db, cudaStream_t stream) {
  if (cols == 0) return;
  if (rows == 0) {  // no rows: db is a sum over nothing
    if (db) ATTNLAB_CUDA_CHECK(cudaMemsetAsync(db, 0, static_cast<std::size_t>(cols) * sizeof(T), stream));
    return;
  }
  // Rows per block: kSlabRows, or more so that the slabs fit gridDim.y.
  const std::int64_t slab = std::max(kSlabRows, (rows + kMaxSlabs - 1) / kMaxSlabs);
  const std::int64_t slabs = (rows + slab - 1) / slab;
  const dim3 grid(static_cast<unsigned>((cols + kColTile - 1) / kColTile), static_cast<unsigned>(slabs));
  const dim3 block(kColTile, kRowThreads);
  if (db == nullptr) {
    relu_mask_kernel<T><<<grid, block, 0, stream>>>(y, dy, rows, cols, slab, dz, nullptr);
    ATTNLAB_CUDA_CHECK_LAUNCH();
    return;
  }
  // The partial sums live until sum_slabs_kernel has read them; the scratch block may go back to
  // the allocator before that, since all of it is ordered on this stream (cuda/scratch.h).
  const DeviceScratch partial(device_index, static_cast<std::size_t>(slabs * cols) * sizeof(compute_t<T>));
  relu_mask_kernel<T><<<grid, block, 0, stream>>>(y, dy, rows, cols, slab, dz, partial.as<compute_t<T>>());
  ATTNLAB_CUDA_CHECK_LAUNCH();
  sum_slabs_kernel<T><<<grid_for(cols), kThreads, 0, stream>>>(partial.as<compute_t<T>>(), slabs, cols, db);
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
