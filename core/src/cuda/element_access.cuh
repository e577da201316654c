#pragma once
// Element loads and stores of the CUDA kernels: bf16 is loaded as f32 and rounded back to nearest
// even on store, the other types are used as they are. No CUDA header, so that the host emulation
// of tests/support/cuda_host_emulation.h can run kernels written with it.
#include <cstdint>

namespace attnlab::cuda {

// bf16 is stored as the upper 16 bits of an f32; kernels compute in f32 and round back to
// nearest even exactly as attnlab::bf16(float) does on the host (NaN stays a quiet NaN).
struct bf16_bits {
  std::uint16_t bits;
};

template <typename T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<bf16_bits> {
  using type = float;
};
template <typename T>
using compute_t = typename compute_type<T>::type;

template <typename T>
__device__ __forceinline__ compute_t<T> load(const T* p, std::int64_t i) {
  return p[i];
}
template <>
__device__ __forceinline__ float load<bf16_bits>(const bf16_bits* p, std::int64_t i) {
  return __uint_as_float(static_cast<unsigned>(p[i].bits) << 16);
}

__device__ __forceinline__ std::uint16_t float_to_bf16_bits(float value) {
  const unsigned u = __float_as_uint(value);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const unsigned rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

template <typename T>
__device__ __forceinline__ void store(T* p, std::int64_t i, compute_t<T> value) {
  p[i] = value;
}
template <>
__device__ __forceinline__ void store<bf16_bits>(bf16_bits* p, std::int64_t i, float value) {
  p[i].bits = float_to_bf16_bits(value);
}

}  // namespace attnlab::cuda
