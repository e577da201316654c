#pragma once
// Tile sizes and the CUDA head sizes of the flash kernels, in a header without fmt so that the
// .cu files and the C++ code read the same numbers.
#include <array>
#include <cstdint>

namespace attnlab::flash {

// Tile sizes of the CPU path and of the FMA CUDA kernels: queries per tile and keys per tile (the
// tensor-core kernels use tiles of 64: flash_tc_device.cuh).
inline constexpr std::int64_t kTileQueries = 32;
inline constexpr std::int64_t kTileKeys = 32;

// The per-head sizes (d_k and d_v, in any pairing) the CUDA kernels are compiled for. The CPU
// path serves any size.
inline constexpr std::array<std::int64_t, 4> kCudaHeadDims = {16, 32, 64, 128};

}  // namespace attnlab::flash
