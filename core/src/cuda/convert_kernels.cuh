#pragma once
// The f32 <-> bf16 conversions of Tensor::to on CUDA, eight values per thread and iteration: the
// casts of bf16 training (every GEMM operand, every output gradient) are memory-bound, and
// 16-byte loads and stores move their bytes in a quarter (f32 side) or an eighth (bf16 side) of
// the transactions of one value per thread. In a header so that the tests run them under the
// host emulation too (tests/support/cuda_host_emulation.h). The same bits as the element-wise
// kernel of convert.cu and as the CPU's conversion: bf16 rounds to nearest even, NaN stays a quiet
// NaN (element_access.cuh).
#include <cstdint>

#include "cuda/element_access.cuh"

namespace attnlab::cuda::convert_kernels {

// Whether p may be read or written 16 bytes at a time.
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Two f32 (their bits) as two bf16 in one word, the first in the low half (little-endian element
// order).
__device__ __forceinline__ unsigned bf16_pair(unsigned lo, unsigned hi) {
  return static_cast<unsigned>(float_to_bf16_bits(__uint_as_float(lo))) |
         (static_cast<unsigned>(float_to_bf16_bits(__uint_as_float(hi))) << 16);
}

// out[i] = bf16(in[i]) for i < n; in and out 16-byte aligned. Grid-stride over the n / 8 groups
// of eight, then over the last n % 8 values.
__global__ void f32_to_bf16_kernel(const float* in,     // in: (n), f32
                                   std::uint16_t* out,  // out: (n), bf16 bits
                                   std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t groups = n / 8;
  const uint4* in4 = reinterpret_cast<const uint4*>(in);  // (groups, 2): four f32 each
  uint4* out4 = reinterpret_cast<uint4*>(out);            // (groups): eight bf16 each
  for (std::int64_t g = first; g < groups; g += stride) {
    const uint4 a = in4[2 * g], b = in4[2 * g + 1];
    uint4 r;
    r.x = bf16_pair(a.x, a.y);
    r.y = bf16_pair(a.z, a.w);
    r.z = bf16_pair(b.x, b.y);
    r.w = bf16_pair(b.z, b.w);
    out4[g] = r;
  }
  for (std::int64_t i = groups * 8 + first; i < n; i += stride) out[i] = float_to_bf16_bits(in[i]);
}

// out[i] = float(in[i]) for i < n (exact: a bf16 is the upper half of an f32); in and out 16-byte
// aligned.
__global__ void bf16_to_f32_kernel(const std::uint16_t* in,  // in: (n), bf16 bits
                                   float* out,               // out: (n), f32
                                   std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t groups = n / 8;
  const uint4* in4 = reinterpret_cast<const uint4*>(in);  // (groups): eight bf16 each
  uint4* out4 = reinterpret_cast<uint4*>(out);            // (groups, 2): four f32 each
  for (std::int64_t g = first; g < groups; g += stride) {
    const uint4 v = in4[g];
    uint4 a, b;
    a.x = v.x << 16, a.y = v.x & 0xffff0000u, a.z = v.y << 16, a.w = v.y & 0xffff0000u;
    b.x = v.z << 16, b.y = v.z & 0xffff0000u, b.z = v.w << 16, b.w = v.w & 0xffff0000u;
    out4[2 * g] = a;
    out4[2 * g + 1] = b;
  }
  for (std::int64_t i = groups * 8 + first; i < n; i += stride)
    out[i] = __uint_as_float(static_cast<unsigned>(in[i]) << 16);
}

}  // namespace attnlab::cuda::convert_kernels
