#pragma once
// The exponentials of the cross-entropy's rows on the CPU, vectorized: libm's expf is
// a scalar call the compiler cannot vectorize (the core is built for baseline x86-64), and over
// the [tokens, vocab] logits of a training step it costs more than the rest of the loss.
//
// exp_approx(x): x = n ln 2 + r with |r| <= ln 2 / 2, exp(r) by a degree-7 polynomial, times
// 2^n built from the exponent bits: within 2 ulp of expf for x in [-87.3, 88.7], 0 below,
// +inf above, NaN for NaN. The row functions are compiled for AVX-512,
// AVX2 and baseline x86-64 (the loader picks one for the CPU it runs on): results can differ in
// the last bit between CPUs (fused multiply-adds), never between two runs on one.
#include <cstdint>

#include "attnlab/cpu_kernels.h"

namespace attnlab::cpu {

// sum_k exp(x[k] - shift), accumulated in double (eight partial sums, added in order).
double sum_exp(const float* x, float shift, std::int64_t n);
// exp_affine, max_row and sum_row are public (attnlab/cpu_kernels.h): the row's other two
// reductions are in the same eight-lane form (the compiler vectorizes them; a single running max
// or sum is a chain of dependent operations).

// One value (the tests' reference point).
float exp_approx(float x);

}  // namespace attnlab::cpu
