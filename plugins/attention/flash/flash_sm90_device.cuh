#pragma once
// Device code that the Hopper (sm_90a) flash kernels share: the tile loads into swizzled shared
// memory, the bf16 copy of an accumulator and the additive terms of a score. Include the CUDA API
// and the Hopper operations first (flash_sm90_ops.cuh, or its host emulation).
#include "flash_device.cuh"
#include "flash_sm90_layouts.cuh"

namespace attnlab::flash::cuda::sm90 {

// The kernels carry scores times log2 e and exponentiate in base 2 (flash_score.h).
using kernels::expression_grad;
using kernels::expression_score;
using kernels::kLog2e;
using kernels::mask_at;
using kernels::pair_dropout;
using kernels::pair_grads;
using kernels::pair_score_log2;
using kernels::pair_weight_log2;
using kernels::PairGrads;

// The additive terms of the pair (query position p, key j), summed before they join its score
// (pair_score_log2): `add` (0, or the key's mask where a kernel holds it per key), then key j's
// entry of the mask row `mask_b` where given, then the position score term where the problem has
// one (ALiBi's slopes, or the query's row of bucket scores).
__device__ __forceinline__ float pair_terms(float add, const kernels::PositionTerms<__nv_bfloat16>& t,
                                            std::int64_t head, const __nv_bfloat16* bucket_row, std::int64_t p,
                                            std::int64_t j, const __nv_bfloat16* mask_b = nullptr) {
  if (mask_b) add += kernels::to_float(mask_b[j]);
  if (t.slopes || bucket_row) add += kernels::score_term(t, head, bucket_row, p, j);
  return add;
}

// The first query and key of a walked tile (MaskedWalk's corners).
struct TileCorner {
  std::int64_t i0, j0;
};

// A block's walk over its partner tiles under score expressions E: `tiles` tiles, tile t covering
// QueryRows queries from corner(t).i0 and KeyCols keys from corner(t).j0. class_of(t) is the tile's
// class under mask_mod (kernels::covering_tile_class) and from(t) the first tile from t on that
// mask_mod does not remove (`tiles` when none); both the same for the whole block. Without a mask
// every tile is kept, and from(t) is t.
template <typename E, int QueryRows, int KeyCols, class Corner>
struct MaskedWalk {
  const expr::DeviceArgs& expr;
  std::int64_t b, head;
  int tiles;
  Corner corner;  // int -> TileCorner

  __device__ __forceinline__ unsigned char class_of(int tile) const {
    if constexpr (!E::kMask) {
      return expr::kTileKept;
    } else {
      const TileCorner c = corner(tile);
      return kernels::covering_tile_class<QueryRows, KeyCols>(expr, b, head, c.i0, c.j0);
    }
  }
  __device__ __forceinline__ int from(int tile) const {
    if constexpr (E::kMask)
      while (tile < tiles && class_of(tile) == expr::kTileRemoved) ++tile;
    return tile;
  }
};
template <typename E, int QueryRows, int KeyCols, class Corner>
__device__ __forceinline__ MaskedWalk<E, QueryRows, KeyCols, Corner> masked_walk(const expr::DeviceArgs& expr,
                                                                                std::int64_t b, std::int64_t head,
                                                                                int tiles, Corner corner) {
  return {expr, b, head, tiles, corner};
}

// Copies rows [row0, row0 + rows) of a [*, D] bf16 head matrix into a swizzled shared-memory
// tile, 16 bytes per asynchronous copy; rows at or past `valid_rows` are zero-filled. `at(r, c)`
// is the shared-memory address of element (row r, column c): eight consecutive columns from a
// multiple of 8 are contiguous in every tile of Tiles<D> and BackwardTiles<D>. Not waited for:
// the caller commits the group and waits for it.
template <int Rows, int D, class At>
__device__ __forceinline__ void load_tile(At at, const __nv_bfloat16* src, std::int64_t row0,
                                          std::int64_t valid_rows) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int e = threadIdx.x; e < Rows * kChunks; e += kThreads) {
    const int r = e / kChunks, c = (e % kChunks) * 8;
    const std::int64_t row = row0 + r;
    const bool valid = row < valid_rows;
    ops::copy16(at(r, c), src + (valid ? row : 0) * D + c, valid);
  }
}

// The swizzled tiles repeat every 1024 bytes: their base in dynamic shared memory must be
// 1024-aligned (each block asks for 1 KiB more than its tiles).
__device__ __forceinline__ Bf16* aligned_base(char* smem) {
  return reinterpret_cast<Bf16*>((reinterpret_cast<std::uintptr_t>(smem) + 1023) & ~std::uintptr_t{1023});
}

// A bf16 copy of an f32 accumulator, in registers laid out as the accumulator's: the register
// operand of the next MMA through a_operand_view (P, or dS, rounded to bf16).
template <class Acc>
__device__ __forceinline__ auto bf16_copy(const Acc& acc) {
  auto copy = cute::make_tensor<Bf16>(acc.layout());
  CUTE_UNROLL
  for (int e = 0; e < cute::size(acc); ++e) copy(e) = static_cast<Bf16>(acc(e));
  return copy;
}

}  // namespace attnlab::flash::cuda::sm90
