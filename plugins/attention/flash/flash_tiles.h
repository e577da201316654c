#pragma once
// Tile sizes and the CUDA head sizes of the flash kernels, in a header without fmt so that the
// .cu files, NVRTC and the C++ code read the same numbers.
#include "attnlab/device_std.h"
#if !defined(__CUDACC_RTC__)
#include <array>
#endif

namespace attnlab::flash {

// Tile sizes of the FMA CUDA kernels: queries per tile and keys per tile (the tensor-core kernels
// use tiles of 64: flash_tc_device.cuh; the CPU path its own: flash_cpu.h).
inline constexpr std::int64_t kTileQueries = 32;
inline constexpr std::int64_t kTileKeys = 32;

#if !defined(__CUDACC_RTC__)
// The per-head sizes (d_k and d_v, in any pairing) the CUDA kernels are compiled for. The CPU
// path serves any size.
inline constexpr std::array<std::int64_t, 4> kCudaHeadDims = {16, 32, 64, 128};
#endif

}  // namespace attnlab::flash
