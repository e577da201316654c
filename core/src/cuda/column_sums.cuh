#pragma once
// Deterministic column sums over the rows of a [rows, cols] matrix in two passes, shared by
// sum_rows (binary_cuda.cu: linear's bias gradient, broadcast gradients) and linear_relu's fused
// mask and bias gradient (linear_relu_cuda.cu):
//   pass 1: block (bx, by) covers the 32 columns 32 bx + tx and the slab of rows
//           [by slab, min(rows, (by + 1) slab)); thread (tx, ty) sums the rows by slab + ty, + 8,
//           + 16, ... of its column in order, then thread row 0 adds the 8 thread sums in ty
//           order into partial[by, j];
//   pass 2: sum_slabs_kernel adds each column's slab sums in slab order.
// The order is fixed, so the sums are the same in every run (no atomics), and every warp reads
// 32 consecutive columns of one row (coalesced). It differs from the CPU's (rows one after the
// other): f32 results agree with the CPU to rounding, not to the bit.
// Include cuda/kernel_util.cuh first.
#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::cuda {

inline constexpr int kColTile = 32;               // columns per block: threadIdx.x, one warp
inline constexpr int kSlabThreads = 8;            // thread rows per block: threadIdx.y
inline constexpr std::int64_t kSlabRows = 64;     // rows per block (more when gridDim.y would overflow)
inline constexpr std::int64_t kMaxSlabs = 65535;  // gridDim.y limit

// The pass-1 launch shape for `rows` x `cols` (rows > 0, cols > 0).
struct SlabGrid {
  std::int64_t slab;   // rows per block
  std::int64_t count;  // blocks along the rows (gridDim.y)
  dim3 grid, block;
};
inline SlabGrid slab_grid(std::int64_t rows, std::int64_t cols) {
  SlabGrid g;
  g.slab = kSlabRows > (rows + kMaxSlabs - 1) / kMaxSlabs ? kSlabRows : (rows + kMaxSlabs - 1) / kMaxSlabs;
  g.count = (rows + g.slab - 1) / g.slab;
  g.grid = dim3(static_cast<unsigned>((cols + kColTile - 1) / kColTile), static_cast<unsigned>(g.count));
  g.block = dim3(kColTile, kSlabThreads);
  return g;
}

// Pass 1's end, called by every thread of the block with its own sum `acc` of column j:
// partial[blockIdx.y, j] = the 8 thread sums of column j in threadIdx.y order.
template <typename C>
__device__ __forceinline__ void write_slab_sum(C acc, std::int64_t j, std::int64_t cols,
                                               C* partial) {  // partial: (gridDim.y, cols)
  __shared__ C sums[kSlabThreads][kColTile];
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    C s = 0;
    for (int t = 0; t < kSlabThreads; ++t) s += sums[t][threadIdx.x];
    partial[static_cast<std::int64_t>(blockIdx.y) * cols + j] = s;
  }
}

// Pass 2: out[j] = sum over s < slabs of partial[s, j], in s order; one thread per column.
template <typename T>
__global__ void sum_slabs_kernel(const compute_t<T>* partial,  // partial: (slabs, cols)
                                 std::int64_t slabs, std::int64_t cols,
                                 T* out) {                     // out: (cols)
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < cols;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    compute_t<T> acc = 0;
    for (std::int64_t s = 0; s < slabs; ++s) acc += partial[s * cols + j];
    store(out, j, acc);
  }
}

}  // namespace attnlab::cuda
