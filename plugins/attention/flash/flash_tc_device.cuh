#pragma once
// Device code the tensor-core (bf16) flash kernels share: the block layout, shared-memory row
// strides, and the copy of bf16 tiles into shared memory. The products go through nvcuda::wmma
// (16x16x16 bf16 fragments, f32 accumulators); fragments are only filled, loaded, multiplied and
// stored, never indexed, so that the code does not depend on how a fragment's elements are spread
// over the lanes. Whatever works on single elements (softmax, masks, dropout, rescaling) reads
// the tile from shared memory after store_matrix_sync. Like flash_device.cuh it includes no CUDA
// header: the .cu files include <cuda_runtime.h>, <cuda_bf16.h> and <mma.h> first, the emulated
// kernel test its host emulation of them.
#include "flash_device.cuh"

namespace attnlab::flash::cuda::tc {

using bf16 = __nv_bfloat16;
using kernels::expression_grad;
using kernels::expression_score;
using kernels::from_float;
using kernels::key_length;
using kernels::key_tile;
using kernels::mask_at;
using kernels::mask_row;
using kernels::pair_dropout;
using kernels::pair_grads;
using kernels::pair_score;
using kernels::pair_weight;
using kernels::PairGrads;
using kernels::query_tile;
using kernels::to_float;
using kernels::visible_end;

// A block is 4 warps (128 threads) over a tile of 64 rows (queries; keys in the dK/dV kernel);
// warp w owns rows 16 w .. 16 w + 15. The partner tiles (keys; queries in the dK/dV kernel) are
// 64 wide. In element-wise work, lanes 2 r and 2 r + 1 of a warp share its row 16 w + r: lane
// parity `half` takes the even (half 0) or odd (half 1) columns.
inline constexpr int kThreads = 128;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kRows = 64;
inline constexpr int kCols = 64;
inline constexpr int kFrag = 16;  // WMMA tile edge (m = n = k = 16)
static_assert(kRows == kWarps * kFrag, "every warp owns one 16-row slice of the tile");
// Row padding, 16 bytes: bf16 rows by 8 elements, f32 rows by 4. WMMA needs ldm to be a multiple
// of 8 (bf16) or 4 (f32) elements, and padding by 16 bytes spreads the rows over the banks.
inline constexpr int kPadH = 8;
inline constexpr int kPadF = 4;

// Byte size of a [rows][ld] shared-memory tile of `bytes`-wide elements. Every tile of these
// kernels is 64 rows of a multiple of 16 bytes, so every size is a multiple of 1 KiB and the tiles
// laid out one after another from the 128-byte-aligned base all start 256-bit aligned, as WMMA
// pointers must (a fragment's first row and column are multiples of 16, which keeps it so).
constexpr int tile_bytes(int rows, int ld, int bytes) { return rows * ld * bytes; }

// Copies rows [row0, row0 + 64) of a [rows, D] bf16 matrix (of one head) into shared memory as
// [64][D + kPadH], 16 bytes (8 elements) per access; rows at or past `valid_rows` are zero-filled.
// The source must be 16-byte aligned (the launchers check it). All threads of the block call it.
template <int D>
__device__ __forceinline__ void load_rows(bf16* dst, const bf16* src, std::int64_t row0, std::int64_t valid_rows) {
  static_assert(D % 8 == 0, "rows are copied 8 elements at a time");
  constexpr int kPerRow = D / 8;
  for (int e = threadIdx.x; e < kRows * kPerRow; e += kThreads) {
    const int r = e / kPerRow, c = (e % kPerRow) * 8;
    const std::int64_t row = row0 + r;
    uint4 value{0u, 0u, 0u, 0u};
    if (row < valid_rows) value = *reinterpret_cast<const uint4*>(src + row * D + c);
    *reinterpret_cast<uint4*>(dst + r * (D + kPadH) + c) = value;
  }
}

// ALiBi's distance bias of query i and key j in head `head` (0 without slopes): the one position
// term the tensor-core kernels apply (bucketed terms go to other kernels: choose_kernel).
__device__ __forceinline__ float alibi_bias(const kernels::PositionTerms<bf16>& t, std::int64_t head, std::int64_t i,
                                            std::int64_t j) {
  return t.slopes ? terms::distance_bias(t.slopes[head], t.q_offset + i, j) : 0.0f;
}

// The class under mask_mod of the tile of queries i0 .. i0 + 63 and keys j0 .. j0 + 63.
__device__ __forceinline__ unsigned char mma_tile_class(const expr::DeviceArgs& a, std::int64_t b, std::int64_t h,
                                                        std::int64_t i0, std::int64_t j0) {
  return kernels::covering_tile_class<kRows, kCols>(a, b, h, i0, j0);
}

// Launch geometry (kThreads threads per block): forward and dQ over query tiles, dK/dV over key tiles.
inline kernels::Grid query_tile_grid(std::int64_t batch_heads, std::int64_t tq) {
  return {static_cast<unsigned>(batch_heads), static_cast<unsigned>((tq + kRows - 1) / kRows)};
}
inline kernels::Grid key_tile_grid(std::int64_t batch_heads, std::int64_t tk) {
  return {static_cast<unsigned>(batch_heads), static_cast<unsigned>((tk + kRows - 1) / kRows)};
}

}  // namespace attnlab::flash::cuda::tc
