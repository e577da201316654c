#pragma once
// The CPU kernels' sums along a row, in a form the compiler vectorizes.
#include <cstdint>

namespace attnlab::cpu {

// sum_j term(j) for j < d in double, as kRowPartials interleaved partial sums (partial k takes
// j = k mod kRowPartials, in order of j) added in order at the end: independent chains the
// compiler turns into vector adds (one running sum is a chain of dependent adds), and the same
// value on every CPU and thread count.
inline constexpr int kRowPartials = 8;
template <typename Term>
inline double row_sum(std::int64_t d, Term term) {
  double acc[kRowPartials] = {};
  std::int64_t j = 0;
  for (; j + kRowPartials <= d; j += kRowPartials)
    for (int k = 0; k < kRowPartials; ++k) acc[k] += term(j + k);
  for (int k = 0; k < kRowPartials && j < d; ++k, ++j) acc[k] += term(j);
  double sum = 0;
  for (double a : acc) sum += a;
  return sum;
}

}  // namespace attnlab::cpu
