#pragma once
// f32 <-> bf16 over arrays on the CPU, vectorized. bf16's own constructor (attnlab/dtype.h) is an
// out-of-line call per value, which no loop vectorizes; under bf16 precision every GEMM operand
// and output gradient passes through this conversion, and at that speed it took about an eighth
// of a training step.
//
// The same arithmetic as bf16(float) and float(bf16), bit for bit: round to nearest, ties to
// even; a NaN stays a NaN (its sign and top mantissa bits kept, the quiet bit set). The loops are
// compiled for AVX-512, AVX2 and baseline x86-64 (the loader picks one for the CPU): integer
// arithmetic only, so every version gives the same bits.
#include <cstdint>

namespace attnlab::cpu {

// out[i] = bf16(in[i]) as its 16 bits.
void f32_to_bf16(const float* in, std::uint16_t* out, std::int64_t n);
// out[i] = float(bf16 with bits in[i]).
void bf16_to_f32(const std::uint16_t* in, float* out, std::int64_t n);

}  // namespace attnlab::cpu
