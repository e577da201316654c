#pragma once
// Helpers shared by the element-wise .cu files: grid sizes, the element loads and stores of
// element_access.cuh, and the floating and index dtype switches. No fmt: nvcc compiles this file.
#include <cstdint>
#include <string>

#include "attnlab/dtype.h"
#include "cuda/check.cuh"
#include "cuda/element_access.cuh"

namespace attnlab::cuda {

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (capped: the loop covers the rest).
inline unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
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

// Calls fn(I{}) with I the type of an index dtype (std::int32_t, std::int64_t); throws naming the
// op otherwise.
template <typename Fn>
void dispatch_index(const char* op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::i32: fn(std::int32_t{}); return;
    case DType::i64: fn(std::int64_t{}); return;
    default: break;
  }
  throw_message(std::string(op) + ": ids must be i32 or i64, got " + std::string(dtype_name(dtype)));
}

}  // namespace attnlab::cuda
