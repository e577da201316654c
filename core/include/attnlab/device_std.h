#pragma once
// The standard headers that device code of the core and of plugins reads (<cmath>, <cstddef>,
// <cstdint>), or, under NVRTC (which has no standard library), CCCL's libcu++ versions with their
// names brought into std, so that one header compiles under nvcc, NVRTC and the host compilers.
#if defined(__CUDACC_RTC__)
#include <cuda/std/cmath>
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
namespace std {
using cuda::std::int16_t;
using cuda::std::int32_t;
using cuda::std::int64_t;
using cuda::std::int8_t;
using cuda::std::size_t;
using cuda::std::uint16_t;
using cuda::std::uint32_t;
using cuda::std::uint64_t;
using cuda::std::uint8_t;
using cuda::std::uintptr_t;
}  // namespace std
#else
#include <cmath>
#include <cstddef>
#include <cstdint>
#endif
