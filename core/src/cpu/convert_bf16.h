#pragma once
// f32 <-> bf16 over arrays on the CPU, vectorized. bf16's own constructor (attnlab/dtype.h) is an
// out-of-line call per value, which no loop vectorizes; under bf16 precision every GEMM operand
// and output gradient passes through this conversion, and at that speed it took about an eighth
// of a training step.
//
// The same arithmetic as bf16(float) and float(bf16), bit for bit (one rounding rule,
// bf16_round_bits, serves both). The loops are
// compiled for AVX-512, AVX2 and baseline x86-64 (the loader picks one for the CPU): integer
// arithmetic only, so every version gives the same bits.
#include <cstdint>

namespace attnlab::cpu {

// The bits of bf16(f32 with bits u), branch-free so that loops over it vectorize: a NaN (exponent
// all ones, mantissa not zero) keeps its top 16 bits with the quiet bit set; every other value is
// rounded to nearest, ties to even (an infinity stays one: nothing is added past its low bits).
// bf16's constructor (dtype.cpp) rounds through it too.
inline std::uint16_t bf16_round_bits(std::uint32_t u) {
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet = (u >> 16) | 0x0040u;
  return static_cast<std::uint16_t>(nan ? quiet : rounded);
}

// out[i] = bf16(in[i]) as its 16 bits.
void f32_to_bf16(const float* in, std::uint16_t* out, std::int64_t n);
// out[i] = float(bf16 with bits in[i]).
void bf16_to_f32(const std::uint16_t* in, float* out, std::int64_t n);

}  // namespace attnlab::cpu
