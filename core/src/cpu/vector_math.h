#pragma once
// Branch-free float versions of exp, log, tanh and sigmoid, so that loops over them vectorize (the C
// library's expf, logf and tanhf are scalar calls the compiler cannot vectorize). The core's row
// functions use them (cpu/exp_rows.cpp), and the build embeds this file's text into the C++ of every
// compiled score-expression kernel (expr/jit_cpu.cpp), so both compute the same values. Needs only
// <cstdint> and <cstring>; no namespace, every name starts with attnlab_vm_.
#include <cstdint>
#include <cstring>

static inline float attnlab_vm_bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
static inline std::uint32_t attnlab_vm_float_to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// exp(x): x = n ln 2 + r with |r| <= ln 2 / 2, exp(r) by a degree-7 polynomial, times 2^n built from
// the exponent bits: within 2 ulp of expf for x in [-87.3, 88.7], 0 below, +inf above, NaN for NaN.
static inline float attnlab_vm_exp(float x) {
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with few bits
  const float kLn2Lo = -2.12194440e-4f;
  const float kRound = 12582912.0f;   // 1.5 * 2^23: adding it rounds to an integer
  // Clamped, NaN included (every comparison with NaN is false): the integer conversion below must
  // see a finite value.
  const float xc = x >= -87.3f ? (x <= 88.7f ? x : 88.7f) : -87.3f;
  const float n = (xc * kLog2e + kRound) - kRound;  // nearest integer to x / ln 2
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;    // |r| <= ln 2 / 2
  // exp(r) = 1 + r + r^2 p(r), p a minimax fit on [-ln 2 / 2, ln 2 / 2].
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * (r * r) + r + 1.0f;
  // 2^n from the exponent bits; n = 128 (x just below 88.7) as 2^127 * 2.
  const float n1 = n > 127.0f ? 127.0f : n;
  const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n1) + 127) << 23;
  float y = e * attnlab_vm_bits_to_float(bits);
  y = n > n1 ? y * 2.0f : y;
  y = x < -87.3f ? 0.0f : y;
  y = x > 88.7f ? attnlab_vm_bits_to_float(0x7f800000u) : y;
  return x != x ? x : y;
}

// log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1), by
// its odd series to s^11 (|s| <= 0.172): within 2 ulp of logf for normal x; -inf at 0, NaN below 0
// and for NaN, +inf at +inf; subnormal x is scaled up first.
static inline float attnlab_vm_log(float x) {
  const bool tiny = x < 1.17549435e-38f;
  const float xs = tiny ? x * 8388608.0f : x;  // 2^23
  const std::uint32_t u = attnlab_vm_float_to_bits(xs);
  std::int32_t e = static_cast<std::int32_t>((u >> 23) & 0xffu) - 127;
  float m = attnlab_vm_bits_to_float((u & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  const bool high = m > 1.41421356f;
  m = high ? m * 0.5f : m;
  e = high ? e + 1 : e;
  const float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  float p = 1.0f / 11.0f;
  p = p * s2 + 1.0f / 9.0f;
  p = p * s2 + 1.0f / 7.0f;
  p = p * s2 + 1.0f / 5.0f;
  p = p * s2 + 1.0f / 3.0f;
  const float lm = 2.0f * s + 2.0f * s * s2 * p;
  const float ef = static_cast<float>(e) - (tiny ? 23.0f : 0.0f);
  float y = ef * 0.693147182f + lm;
  y = x == 0.0f ? -attnlab_vm_bits_to_float(0x7f800000u) : y;
  y = x < 0.0f ? attnlab_vm_bits_to_float(0x7fc00000u) : y;
  y = x == attnlab_vm_bits_to_float(0x7f800000u) ? x : y;
  return x != x ? x : y;
}

// tanh(x): its odd Taylor series to x^15 below |x| = 0.55 (the next term is under half an ulp
// there), 1 - 2 / (exp(2|x|) + 1) above (with x's sign; no cancellation left past 0.55), +-1 past
// |x| = 9.1: within a few ulp of tanhf.
static inline float attnlab_vm_tanh(float x) {
  const float a = x < 0.0f ? -x : x;
  const float x2 = x * x;
  // x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - 1382x^11/155925 + 21844x^13/6081075
  //   - 929569x^15/638512875
  float p = -929569.0f / 638512875.0f;
  p = p * x2 + 21844.0f / 6081075.0f;
  p = p * x2 - 1382.0f / 155925.0f;
  p = p * x2 + 62.0f / 2835.0f;
  p = p * x2 - 17.0f / 315.0f;
  p = p * x2 + 2.0f / 15.0f;
  p = p * x2 - 1.0f / 3.0f;
  const float small = x + x * x2 * p;
  const float big = 1.0f - 2.0f / (attnlab_vm_exp(2.0f * (a < 9.1f ? a : 9.1f)) + 1.0f);
  const float y = a < 0.55f ? small : (x < 0.0f ? -big : big);
  return x != x ? x : y;
}

// sigmoid(x) = 1 / (1 + exp(-x)).
static inline float attnlab_vm_sigmoid(float x) { return 1.0f / (1.0f + attnlab_vm_exp(-x)); }
