#pragma once
// The Hopper (sm_90a) flash kernels' tiles as CuTe layouts: the warpgroup MMAs, the swizzled
// shared-memory tiles they read, and the two views of an accumulator that the softmax needs.
// Host and device code alike: the kernels (flash_sm90_forward_kernel.cuh,
// flash_sm90_backward_kernels.cuh) use them, and a host test
// (tests/flash_sm90/test_flash_sm90_layouts.cpp) checks on the CPU that the index math below
// holds for every thread. CuTe comes from NVIDIA CUTLASS (cmake: ATTNLAB_CUTLASS_DIR).
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "flash_head_sizes.h"

namespace attnlab::flash::cuda::sm90 {

using Bf16 = cute::bfloat16_t;

// A block is two warpgroups (256 threads) over a tile of 128 queries: warpgroup g owns queries
// 64 g .. 64 g + 63. Key tiles are 128 keys. Both products run on Hopper's warpgroup MMA (wgmma):
//   S = Q K^T:  A = Q [128 x D] and B = K [128 x D] from shared memory, both K-major;
//   O += P V:   A = P [128 x 128] from registers (the bf16 copy of S's accumulator), B = V read
//               from shared memory as [D x 128] (V's rows are keys: MN-major).
inline constexpr int kWarpgroups = 2;
inline constexpr int kThreads = 128 * kWarpgroups;
inline constexpr int kBlockM = 64 * kWarpgroups;
inline constexpr int kBlockN = 128;
inline constexpr int kStages = 2;  // K and V tiles in flight: the next loads while this one is used

// The block's warpgroup MMAs, tiled over its two warpgroups (M = 128), bf16 in and f32 out:
//   ScoreMma<N, K>:    A (M x K) and B (N x K) both from shared memory, K-major;
//   RegisterMma<N, K>: A from registers, B (N x K) from shared memory, MN-major.
using Warpgroups = cute::Layout<cute::Shape<cute::Int<kWarpgroups>, cute::_1, cute::_1>>;
template <int N, int K>
using ScoreMma = decltype(cute::make_tiled_mma(
    cute::SM90::GMMA::ss_op_selector<Bf16, Bf16, float, cute::Shape<cute::_64, cute::Int<N>, cute::Int<K>>>(),
    Warpgroups{}));
template <int N, int K>
using RegisterMma = decltype(cute::make_tiled_mma(
    cute::SM90::GMMA::rs_op_selector<Bf16, Bf16, float, cute::Shape<cute::_64, cute::Int<N>, cute::Int<K>>,
                                     cute::GMMA::Major::K, cute::GMMA::Major::MN>(),
    Warpgroups{}));
// A 128-byte swizzled (row, d) tile of Rows x D with d contiguous (the K-major operand layout).
template <int Rows, int D>
using KMajorTile = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Bf16>{},
                                                cute::Shape<cute::Int<Rows>, cute::Int<D>>{}));

template <int D>
struct Tiles {
  static_assert(MmaHeadSizes::has(D), "the Hopper kernels serve MmaHeadSizes (flash_head_sizes.h)");
  using MmaS = ScoreMma<kBlockN, D>;
  using MmaO = RegisterMma<D, kBlockN>;
  // 128-byte swizzled tiles: (query, d) and (key, d) with d contiguous; V as (d, key), d contiguous.
  using SmemQ = KMajorTile<kBlockM, D>;
  using SmemK = KMajorTile<kBlockN, D>;
  using SmemV = decltype(cute::tile_to_shape(cute::GMMA::Layout_MN_SW128_Atom<Bf16>{},
                                             cute::Shape<cute::Int<D>, cute::Int<kBlockN>>{}));
  static constexpr int q_elements = kBlockM * D;
  static constexpr int kv_elements = kBlockN * D;  // one stage of K, or of V
  // Dynamic shared memory: Q, kStages of K and of V, and 1 KiB to align the base to the
  // swizzle's 1024-byte period. D 64: 81 KiB (2 blocks per SM); D 128: 161 KiB (1 block).
  static constexpr int smem_bytes = (q_elements + 2 * kStages * kv_elements) * 2 + 1024;
};

// The backward's tiles. A block of two warpgroups holds 128 rows and walks tiles of kBwdN:
//   dq_kernel:   rows are queries, the walk is over keys: S = Q K^T and dP = dO V^T (MmaS, all
//                four from shared memory, K-major), then dQ += dS K (MmaG: dS from registers, K
//                read as (d, key): MN-major);
//   dkdv_kernel: rows are keys, the walk is over queries: S^T = K Q^T and dP^T = V dO^T (MmaS),
//                then dV += P^T dO and dK += dS^T Q (MmaG, dO and Q read as (d, query)).
// A walked tile is stored once, (row, d) with d contiguous, and read both ways: WalkT is the same
// memory as (d, row), the MN-major view of it. Walked tiles are 64 wide so that the four
// accumulators of dkdv_kernel (S^T, dP^T, dK, dV) fit in registers at head size 128.
inline constexpr int kBwdN = 64;

template <int D>
struct BackwardTiles {
  static_assert(MmaHeadSizes::has(D), "the Hopper kernels serve MmaHeadSizes (flash_head_sizes.h)");
  using MmaS = ScoreMma<kBwdN, D>;
  using MmaG = RegisterMma<D, kBwdN>;
  using Rows = KMajorTile<kBlockM, D>;
  using Walk = KMajorTile<kBwdN, D>;
  using WalkT = decltype(cute::composition(
      Walk{},
      cute::make_ordered_layout(cute::Shape<cute::Int<D>, cute::Int<kBwdN>>{}, cute::Step<cute::_2, cute::_1>{})));
  static constexpr int rows_elements = kBlockM * D;
  static constexpr int walk_elements = kBwdN * D;
  // Dynamic shared memory: two tiles of the block's rows (Q and dO, or K and V), kStages of the
  // two walked tiles (K and V, or Q and dO), and 1 KiB of alignment. D 64: 65 KiB; D 128: 129 KiB.
  static constexpr int smem_bytes = (2 * rows_elements + 2 * kStages * walk_elements) * 2 + 1024;
};

// An accumulator of a 64-row warpgroup MMA, ((2 columns, 2 row halves, N / 8), M tiles, N tiles)
// per thread, seen as (rows, columns): ((2 row halves, M tiles), (2 columns, N / 8, N tiles)).
// Every element of one row of this view is the same query; the softmax works on it.
template <class Layout>
CUTE_HOST_DEVICE constexpr auto rows_by_columns(Layout acc) {
  using cute::get;
  static_assert(decltype(cute::rank<0>(acc))::value == 3, "a wgmma accumulator");
  return cute::make_layout(cute::make_layout(get<0, 1>(acc), get<1>(acc)),
                           cute::make_layout(get<0, 0>(acc), get<0, 2>(acc), get<2>(acc)));
}

// The same accumulator as the A operand of the next MMA, whose K is this one's N: per thread
// ((2 columns, 2 row halves, 2 column octets), M tiles, N / 16). A 16-wide K step of a register-A
// wgmma holds exactly what the accumulator holds for 16 of its columns, so P needs no shuffles.
template <class Layout>
CUTE_HOST_DEVICE constexpr auto as_a_operand(Layout acc) {
  using cute::get;
  static_assert(decltype(cute::rank<0>(acc))::value == 3, "a wgmma accumulator");
  const auto octets = cute::logical_divide(get<0, 2>(acc), cute::Tile<cute::_2>{});  // ((2, N / 16))
  return cute::make_layout(cute::make_layout(get<0, 0>(acc), get<0, 1>(acc), get<0, 0>(octets)), get<1>(acc),
                           cute::coalesce(cute::make_layout(get<0, 1>(octets), get<2>(acc))));
}

// A tensor (an accumulator, or the coordinates of one) viewed rows by columns, and a register
// tensor viewed as the A operand of the next MMA; both views share the tensor's registers.
template <class Tensor>
CUTE_HOST_DEVICE constexpr auto by_rows(Tensor& t) {
  return cute::make_tensor(t.data(), rows_by_columns(t.layout()));
}
template <class Tensor>
CUTE_HOST_DEVICE constexpr auto a_operand_view(Tensor& t) {
  return cute::make_tensor(t.data(), as_a_operand(t.layout()));
}

}  // namespace attnlab::flash::cuda::sm90
