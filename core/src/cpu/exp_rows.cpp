#include "cpu/exp_rows.h"
#include "cpu/row_sum.h"

#include <bit>
#include <cstdint>
#include <limits>

// Several instruction-set versions of the row loops on x86-64 with GCC or clang (ifunc dispatch).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__SANITIZE_ADDRESS__)
#define ATTNLAB_ROW_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNLAB_ROW_CLONES
#endif

namespace attnlab::cpu {
namespace {

// Branch-free, so that loops over it vectorize.
inline float exp_inline(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;           // ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with few bits
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;            // 1.5 * 2^23: adding it rounds to an integer
  // Clamped, NaN included (every comparison with NaN is false): the integer conversion below
  // must see a finite value.
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
  const auto bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n1) + 127) << 23;
  float y = e * std::bit_cast<float>(bits);
  y = n > n1 ? y * 2.0f : y;
  y = x < -87.3f ? 0.0f : y;
  y = x > 88.7f ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;
}

}  // namespace

float exp_approx(float x) { return exp_inline(x); }

ATTNLAB_ROW_CLONES double sum_exp(const float* x, float shift, std::int64_t n) {
  double acc[8] = {};
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) acc[j] += static_cast<double>(exp_inline(x[k + j] - shift));
  for (; k < n; ++k) acc[0] += static_cast<double>(exp_inline(x[k] - shift));
  double s = 0;
  for (double a : acc) s += a;
  return s;
}

ATTNLAB_ROW_CLONES float max_row(const float* x, std::int64_t n) {
  float acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = -std::numeric_limits<float>::infinity();
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) acc[j] = acc[j] < x[k + j] ? x[k + j] : acc[j];
  for (; k < n; ++k) acc[0] = acc[0] < x[k] ? x[k] : acc[0];
  float m = acc[0];
  for (int j = 1; j < 8; ++j) m = m < acc[j] ? acc[j] : m;
  return m;
}

ATTNLAB_ROW_CLONES double sum_row(const float* x, std::int64_t n) {
  return row_sum(n, [&](std::int64_t k) { return static_cast<double>(x[k]); });
}

ATTNLAB_ROW_CLONES void exp_affine(const float* x, float shift, float scale, float sub, float* out,
                                   std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) out[k] = scale * (exp_inline(x[k] - shift) - sub);
}

}  // namespace attnlab::cpu
