#pragma once
// Helpers shared by the element-wise .cu files: grid sizes, bf16 loads and stores (computed in
// f32), and the floating dtype switch. No fmt: nvcc compiles this file.
#include <cstdint>
#include <string>

#include "attnlab/dtype.h"
#include "cuda/check.cuh"

namespace attnlab::cuda {

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (capped: the loop covers the rest).
inline unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

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

// Calls fn(T{}) with T the storage type of a floating dtype (float, double, bf16_bits); throws
// naming the op otherwise.
template <typename Fn>
void dispatch_floating(const char* op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: fn(float{}); return;
    case DType::f64: fn(double{}); return;
    case DType::bf16: fn(bf16_bits{}); return;
    default: break;
  }
  throw_message(std::string(op) + ": dtype " + std::string(dtype_name(dtype)) +
                " is not supported on cuda (f32, f64, bf16)");
}

}  // namespace attnlab::cuda
