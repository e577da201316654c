#pragma once
// The head sizes the CUDA kernels' templates are compiled for, and the one dispatch from a
// run-time size to a template argument. HeadSizes<Sizes...>:
//   has(d)                       whether d is one of Sizes;
//   with(d, otherwise, fn)       fn(std::integral_constant<int, D>{}) for the D that d is, else
//                                `otherwise`;
//   with(dk, dv, otherwise, fn)  fn(DK, DV) as integral constants for a pair, else `otherwise`.
// Plain C++: the choice of kernel (flash_kernel_choice.h) asks has(), the launchers and the block
// sizes call with().
#include <cstdint>
#include <type_traits>

#include "flash_tiles.h"

namespace attnlab::flash::cuda {

template <int... Sizes>
struct HeadSizes {
  static constexpr bool has(std::int64_t d) { return ((d == Sizes) || ...); }

  template <typename R, typename Fn>
  static constexpr R with(std::int64_t d, R otherwise, Fn&& fn) {
    R result = otherwise;
    (void)((d == Sizes ? (result = fn(std::integral_constant<int, Sizes>{}), true) : false) || ...);
    return result;
  }
  template <typename R, typename Fn>
  static constexpr R with(std::int64_t dk, std::int64_t dv, R otherwise, Fn&& fn) {
    return with(dk, otherwise,
                [&](auto dk_c) { return with(dv, otherwise, [&](auto dv_c) -> R { return fn(dk_c, dv_c); }); });
  }
};

// Every CUDA kernel's head sizes: the FMA kernels serve these for d_k and d_v in any pairing
// (kCudaHeadDims, which flash_attention checks before any kernel runs).
using CudaHeadSizes = HeadSizes<16, 32, 64, 128>;
// The MMA kernels' head sizes: the tensor-core kernels in any pairing, the Hopper kernels with d_k = d_v.
using MmaHeadSizes = HeadSizes<64, 128>;

static_assert(
    [] {
      for (std::int64_t d : kCudaHeadDims)
        if (!CudaHeadSizes::has(d)) return false;
      return kCudaHeadDims.size() == 4;
    }(),
    "kCudaHeadDims are the FMA kernels' sizes");

}  // namespace attnlab::flash::cuda
