#include "cpu/exp_rows.h"
#include "cpu/row_sum.h"
#include "cpu/vector_math.h"

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

// Branch-free, so that loops over it vectorize (cpu/vector_math.h).
inline float exp_inline(float x) { return attnlab_vm_exp(x); }

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
