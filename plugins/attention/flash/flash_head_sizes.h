#pragma once
// The head sizes the CUDA kernels' templates are compiled for, the one list every check, table
// index and message about them derives from, and the one dispatch from a run-time size to a
// template argument. HeadSizes<Sizes...>:
//   list, count                  the sizes, in rising order;
//   has(d)                       whether d is one of Sizes;
//   index(d)                     d's place in the list (-1: none), for tables per size;
//   with(d, otherwise, fn)       fn(std::integral_constant<int, D>{}) for the D that d is, else
//                                `otherwise`;
//   with(dk, dv, otherwise, fn)  fn(DK, DV) as integral constants for a pair, else `otherwise`.
// Plain C++: the choice of kernel (flash_kernel_choice.h) asks has(), the launchers and the block
// sizes call with(). Under NVRTC (the Hopper kernels' layouts check their head size against it),
// libcu++'s array and integral_constant stand in, and text() is left out.
#if defined(__CUDACC_RTC__)
#include <cuda/std/array>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>
namespace attnlab::flash::cuda::detail_std {
using ::cuda::std::array;
using ::cuda::std::int64_t;
using ::cuda::std::integral_constant;
using ::cuda::std::size_t;
}  // namespace attnlab::flash::cuda::detail_std
#else
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
namespace attnlab::flash::cuda::detail_std {
using std::array;
using std::int64_t;
using std::integral_constant;
using std::size_t;
}  // namespace attnlab::flash::cuda::detail_std
#endif

namespace attnlab::flash::cuda {

template <int... Sizes>
struct HeadSizes {
  static constexpr detail_std::size_t count = sizeof...(Sizes);
  static constexpr detail_std::array<detail_std::int64_t, count> list = {Sizes...};
  static constexpr bool has(detail_std::int64_t d) { return ((d == Sizes) || ...); }
  static constexpr int index(detail_std::int64_t d) {
    for (detail_std::size_t i = 0; i < count; ++i)
      if (list[i] == d) return static_cast<int>(i);
    return -1;
  }
#if !defined(__CUDACC_RTC__)
  // "16, 32, 64 and 128", for messages.
  static std::string text() {
    std::string out;
    for (std::size_t i = 0; i < count; ++i)
      out += (i == 0 ? "" : i + 1 == count ? " and " : ", ") + std::to_string(list[i]);
    return out;
  }
#endif

  template <typename R, typename Fn>
  static constexpr R with(detail_std::int64_t d, R otherwise, Fn&& fn) {
    R result = otherwise;
    (void)((d == Sizes ? (result = fn(detail_std::integral_constant<int, Sizes>{}), true) : false) || ...);
    return result;
  }
  template <typename R, typename Fn>
  static constexpr R with(detail_std::int64_t dk, detail_std::int64_t dv, R otherwise, Fn&& fn) {
    return with(dk, otherwise,
                [&](auto dk_c) { return with(dv, otherwise, [&](auto dv_c) -> R { return fn(dk_c, dv_c); }); });
  }
};

// Every CUDA kernel's head sizes: the FMA kernels serve these for d_k and d_v in any pairing
// (kCudaHeadDims, which flash_attention checks before any kernel runs; the CPU path serves any).
using CudaHeadSizes = HeadSizes<16, 32, 64, 128>;
// The MMA kernels' head sizes: the tensor-core kernels in any pairing, the Hopper kernels with d_k = d_v.
using MmaHeadSizes = HeadSizes<64, 128>;
static_assert([] {
  for (detail_std::int64_t d : MmaHeadSizes::list)
    if (!CudaHeadSizes::has(d)) return false;
  return true;
}(), "every MMA kernel's head size has FMA kernels too (they serve what the MMA kernels refuse)");

}  // namespace attnlab::flash::cuda

namespace attnlab::flash {
inline constexpr auto kCudaHeadDims = cuda::CudaHeadSizes::list;
}  // namespace attnlab::flash
