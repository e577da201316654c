#pragma once
// Device code the flash kernels share: the block layout, element conversions, the visibility
// rule of keys, row-group reductions and tile loads (and, through flash_score.h, the per-score
// sequence). Like the kernel headers
// (flash_forward_kernels.cuh, flash_backward_kernels.cuh) it includes no CUDA header: the .cu
// files include <cuda_runtime.h> and <cuda_bf16.h> first, and the kernel test that runs the same
// device code on host threads (tests/plugins/test_flash_kernels_emulated.cpp) includes its
// emulation of that API instead. No fmt here: nvcc compiles this file.
#include "attnlab/device_std.h"
#include "attnlab/expr/device_abi.h"
#include "attnlab/plugin/kernel_term_math.h"
#include "flash_dropout.h"
#include "flash_score.h"
#include "flash_tiles.h"

namespace attnlab::flash::cuda::kernels {

// A block is 128 threads (4 warps) over a tile of 32 rows (queries; keys in the dK/dV kernel):
// 4 consecutive threads share a row. Thread t owns row t / 4 and, within the row, the 8
// consecutive columns (keys; queries in the dK/dV kernel) 8 (t % 4) .. 8 (t % 4) + 7 of the
// 32-wide partner tile, and the head-size components g, g + 4, g + 8, ... (g = t % 4) of its
// row's accumulators.
inline constexpr int kThreads = 128;
inline constexpr int kGroup = 4;                 // threads per row
inline constexpr int kRows = kThreads / kGroup;  // 32
inline constexpr int kCols = 32;                 // partner tile width
inline constexpr int kColsPerThread = kCols / kGroup;  // 8
static_assert(kRows == kTileQueries && kCols == kTileKeys, "the CUDA tiles are those of flash_tiles.h");

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Query i sees keys [0, visible_end): the batch row's real keys, and under causal masking those
// with j <= i + (tk - tq). Never above tk (length <= tk).
__device__ __forceinline__ std::int64_t visible_end(std::int64_t i, std::int64_t length, std::int64_t tq, std::int64_t tk,
                                                    bool causal) {
  if (!causal) return length;
  std::int64_t end = i + (tk - tq) + 1;
  end = end < 0 ? 0 : end;
  return end < length ? end : length;
}

__device__ __forceinline__ std::int64_t key_length(const std::int32_t* lengths, std::int64_t b, std::int64_t tk) {
  if (!lengths) return tk;
  const std::int64_t len = lengths[b];
  return len < 0 ? 0 : (len > tk ? tk : len);
}

// Position terms in kernel form (attnlab/plugin/kernel_terms.h) as the kernels read them. Query i
// sits at position q_offset + i (q_offset = Tk - Tq), key j at j; r(p, j) is the distance bucket.
template <typename T>
struct PositionTerms {
  const float* __restrict__ slopes = nullptr;  // (H), or null: score -slopes[h] |p - j|
  const T* __restrict__ scores = nullptr;      // (B, H, Tq, 2 score_clip + 1), or null: score S[.., r]
  const T* __restrict__ values = nullptr;      // (2 value_clip + 1, DV), or null: output += w V[r]
  std::int64_t score_clip = 0, value_clip = 0, q_offset = 0;
};

// The score term of query position p (of head `head`, bucket scores `score_row`) and key j.
template <typename T>
__device__ __forceinline__ float score_term(const PositionTerms<T>& t, std::int64_t head, const T* score_row,
                                            std::int64_t p, std::int64_t j) {
  float s = 0.0f;
  if (t.slopes) s += terms::distance_bias(t.slopes[head], p, j);
  if (score_row) s += to_float(score_row[terms::distance_bucket(p, j, t.score_clip)]);
  return s;
}
// Query i's row of bucket scores of head bh (null without bucket scores).
template <typename T>
__device__ __forceinline__ const T* score_row(const PositionTerms<T>& t, std::int64_t bh, std::int64_t tq,
                                              std::int64_t i) {
  return t.scores ? t.scores + (bh * tq + i) * terms::bucket_count(t.score_clip) : nullptr;
}
// The bucket value vector of query position p and key j (null without value terms).
template <typename T, int DV>
__device__ __forceinline__ const T* value_row(const PositionTerms<T>& t, std::int64_t p, std::int64_t j) {
  return t.values ? t.values + terms::distance_bucket(p, j, t.value_clip) * DV : nullptr;
}

// What every flash kernel reads: the inputs of one attention, their shape and its options. One
// kernel argument, passed by value (the pointers are device memory).
template <typename T>
struct Inputs {
  const T* __restrict__ q;                  // (B, H, Tq, DK)
  const T* __restrict__ k;                  // (B, H, Tk, DK)
  const T* __restrict__ v;                  // (B, H, Tk, DV)
  const T* __restrict__ mask;               // (B, Tk) additive, or null
  const std::int32_t* __restrict__ lengths; // (B), or null
  std::int64_t heads, tq, tk;
  bool causal;
  float scale;
  DropoutStream drop;
  PositionTerms<T> terms;  // none by default (the tensor-core kernels take ALiBi's slopes only)
  // What score expressions read (attnlab/expr/device_abi.h); unused by kernels instantiated
  // without expressions (expr::NoExpressions).
  expr::DeviceArgs expr;
};

// A score after score expressions E: E::score of x (the scaled product with its position term),
// or -inf where the tile is mixed and E::keep removes the pair (query i, key j of batch row b,
// head h; q_idx is i past the expressions' q_offset).
template <typename E, typename T>
__device__ __forceinline__ float expression_score(const Inputs<T>& in, float x, unsigned char cls, std::int64_t b,
                                                  std::int64_t h, std::int64_t i, std::int64_t j) {
  const int qi = static_cast<int>(in.expr.q_offset + i), bi = static_cast<int>(b), hi = static_cast<int>(h);
  const int kj = static_cast<int>(j);
  if (E::kMask && cls == expr::kTileMixed && !E::keep(in.expr, bi, hi, qi, kj)) return -INFINITY;
  return E::score(x, in.expr, bi, hi, qi, kj);
}

// The class under mask_mod of a kernel's tile of queries i0 .. i0 + Rows - 1 and keys
// j0 .. j0 + Cols - 1, tiles larger than the host's (the MMA kernels): the host classifies the FMA
// kernels' tiles (expr::DeviceArgs: 32 x 32), this combines those the tile covers: removed when all
// are, kept when all are, mixed otherwise. The same for the whole block.
template <int Rows, int Cols>
__device__ __forceinline__ unsigned char covering_tile_class(const expr::DeviceArgs& a, std::int64_t b,
                                                             std::int64_t h, std::int64_t i0, std::int64_t j0) {
  if (!a.tiles) return expr::kTileKept;
  bool removed = true, kept = true;
  for (std::int64_t i = i0; i < i0 + Rows && i / a.tile_rows < a.tiles_q; i += a.tile_rows)
    for (std::int64_t j = j0; j < j0 + Cols && j / a.tile_cols < a.tiles_k; j += a.tile_cols) {
      const unsigned char c = expr::tile_class(a, b, h, i, j);
      removed = removed && c == expr::kTileRemoved;
      kept = kept && c == expr::kTileKept;
    }
  return removed ? expr::kTileRemoved : kept ? expr::kTileKept : expr::kTileMixed;
}

// The gradient of a pair's raw score (before E) from ds, that of E::score's result: E::grad at the
// raw score x, adding to the learned tensors' accumulators when `learn`.
template <typename E, typename T>
__device__ __forceinline__ float expression_grad(const Inputs<T>& in, float x, float ds, std::int64_t b,
                                                 std::int64_t h, std::int64_t i, std::int64_t j, bool learn) {
  return E::grad(x, ds, in.expr, static_cast<int>(b), static_cast<int>(h), static_cast<int>(in.expr.q_offset + i),
                 static_cast<int>(j), learn);
}

// What the backward kernels read besides: the output's gradient and the forward's statistics.
template <typename T>
struct BackwardInputs : Inputs<T> {
  const T* __restrict__ dout;        // (B, H, Tq, DV)
  const float* __restrict__ lse;     // (B, H, Tq)
  const float* __restrict__ delta;   // (B, H, Tq): rowsum(dout * out)
};

// Where a thread of a query-tile block (forward, dq) stands. Block (bh = blockIdx.x, blockIdx.y)
// holds queries i0 .. i0 + rows - 1 of head bh (batch row b); the thread's query is row `row` of
// the tile, i = i0 + row. Keys [0, key_end) are those the tile's last query sees (the same for
// the whole block, so loops over them reach every barrier); [0, row_end) those query i sees.
struct QueryTile {
  std::int64_t bh, b, i0, i;
  bool row_valid;       // i < Tq
  std::int64_t length;  // real keys of batch row b
  std::int64_t key_end, row_end;
};
template <int kTileRows, typename T>
__device__ __forceinline__ QueryTile query_tile(const Inputs<T>& in, int row) {
  const std::int64_t bh = blockIdx.x, b = bh / in.heads;
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.y) * kTileRows, i = i0 + row;
  const std::int64_t length = key_length(in.lengths, b, in.tk);
  const std::int64_t last = (i0 + kTileRows < in.tq ? i0 + kTileRows : in.tq) - 1;
  const bool row_valid = i < in.tq;
  return {bh, b, i0, i, row_valid, length, visible_end(last, length, in.tq, in.tk, in.causal),
          row_valid ? visible_end(i, length, in.tq, in.tk, in.causal) : 0};
}

// Where a thread of a key-tile block (dk/dv) stands: block (bh = blockIdx.x, blockIdx.y) holds
// keys j0 .. j0 + cols - 1 of head bh; the thread's key is column `col` of the tile.
struct KeyTile {
  std::int64_t bh, b, j0, j;
  bool key_valid;       // j < Tk
  std::int64_t length;  // real keys of batch row b
};
template <int kTileCols, typename T>
__device__ __forceinline__ KeyTile key_tile(const Inputs<T>& in, int col) {
  const std::int64_t bh = blockIdx.x, b = bh / in.heads;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.y) * kTileCols, j = j0 + col;
  return {bh, b, j0, j, j < in.tk, key_length(in.lengths, b, in.tk)};
}

// The mask row of batch row b (null without a mask), key j's entry of it (0 without a mask), and
// the scale of kept weights, 1 / (1 - p).
template <typename T>
__device__ __forceinline__ const T* mask_row(const Inputs<T>& in, std::int64_t b) {
  return in.mask ? in.mask + b * in.tk : nullptr;
}
template <typename T>
__device__ __forceinline__ float mask_at(const T* mask_b, std::int64_t j) {
  return mask_b ? to_float(mask_b[j]) : 0.0f;
}
__device__ __forceinline__ float keep_scale(const DropoutStream& drop) {
  return static_cast<float>(1.0 / (1.0 - drop.p));
}

// The sum and the maximum over the 4 threads of a row group (lanes 4r .. 4r + 3 of a warp).
// Every lane of the warp must call these together.
__device__ __forceinline__ float group_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float group_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Copies rows [row0, row0 + kRows) of a [rows, D] matrix (of one head) into shared memory as
// float [kRows][D + pad], zero-filling rows at or past `valid_rows`. All threads of the block call it.
template <int D, int kPad, typename T>
__device__ __forceinline__ void load_tile(float* dst, const T* src, std::int64_t row0, std::int64_t valid_rows) {
  for (int e = threadIdx.x; e < kRows * D; e += kThreads) {
    const int r = e / D, d = e % D;
    const std::int64_t row = row0 + r;
    dst[r * (D + kPad) + d] = row < valid_rows ? to_float(src[row * D + d]) : 0.0f;
  }
}

// Zeros rows [row0, row0 + Rows) of one head's [valid_rows, D] matrix (those below valid_rows),
// the block's Threads threads striding over the elements: the gradients of a key tile that is all
// padding. All threads of the block call it.
template <int Rows, int D, int Threads, typename T>
__device__ __forceinline__ void zero_rows(T* head, std::int64_t row0, std::int64_t valid_rows) {
  for (int e = threadIdx.x; e < Rows * D; e += Threads)
    if (row0 + e / D < valid_rows) head[row0 * D + e] = from_float<T>(0.0f);
}

// Launch geometry: blocks along x and y (kThreads threads each). The launchers and the emulated
// kernel test both take it from here.
struct Grid {
  unsigned x, y;
};
// forward_kernel and dq_kernel: (B * H, query tiles).
inline Grid query_tile_grid(std::int64_t batch_heads, std::int64_t tq) {
  return {static_cast<unsigned>(batch_heads), static_cast<unsigned>((tq + kRows - 1) / kRows)};
}
// dkdv_kernel: (B * H, key tiles).
inline Grid key_tile_grid(std::int64_t batch_heads, std::int64_t tk) {
  return {static_cast<unsigned>(batch_heads), static_cast<unsigned>((tk + kCols - 1) / kCols)};
}
// delta_kernel: one warp per row.
inline Grid delta_grid(std::int64_t rows) {
  return {static_cast<unsigned>((rows + kThreads / 32 - 1) / (kThreads / 32)), 1u};
}
// key_lengths_kernel: one thread per batch row (a grid-stride loop covers more than 65535 blocks).
inline Grid key_lengths_grid(std::int64_t batch) {
  const std::int64_t blocks = (batch + kThreads - 1) / kThreads;
  return {static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 1u};
}

}  // namespace attnlab::flash::cuda::kernels
