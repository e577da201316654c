#pragma once
// Tile sizes of the flash kernels, in a header without fmt so that the .cu files, NVRTC and the
// C++ code read the same numbers (their head sizes: flash_head_sizes.h).
#include "attnlab/device_std.h"

namespace attnlab::flash {

// Tile sizes of the FMA CUDA kernels: queries per tile and keys per tile (the tensor-core kernels
// use tiles of 64: flash_tc_device.cuh; the CPU path its own: flash_cpu.h).
inline constexpr std::int64_t kTileQueries = 32;
inline constexpr std::int64_t kTileKeys = 32;

}  // namespace attnlab::flash
