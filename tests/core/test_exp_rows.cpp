// The vectorized exponentials of the CPU kernels (cpu/exp_rows.h) against libm.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/exp_rows.h"

using namespace attnlab;

namespace {

// Distance in units in the last place between two finite floats of one sign.
std::int64_t ulps(float a, float b) {
  return std::abs(static_cast<std::int64_t>(std::bit_cast<std::int32_t>(a)) -
                  static_cast<std::int64_t>(std::bit_cast<std::int32_t>(b)));
}

}  // namespace

TEST_CASE("exp_approx is within 2 ulp of expf over its whole range") {
  std::int64_t worst = 0;
  float worst_x = 0;
  for (float x = -87.3f; x <= 88.7f; x += 0.0007f) {
    const std::int64_t d = ulps(cpu::exp_approx(x), std::exp(x));
    if (d > worst) worst = d, worst_x = x;
  }
  INFO("worst at x = ", worst_x);
  CHECK(worst <= 2);
  // Known values.
  CHECK(cpu::exp_approx(0.0f) == 1.0f);
  CHECK(ulps(cpu::exp_approx(1.0f), 2.71828183f) <= 1);
  CHECK(ulps(cpu::exp_approx(-1.0f), 0.367879441f) <= 1);
  CHECK(ulps(cpu::exp_approx(88.6f), std::exp(88.6f)) <= 2);  // 2^128 scale, built as 2^127 * 2
}

TEST_CASE("exp_approx at the ends: 0, infinity and NaN") {
  CHECK(cpu::exp_approx(-90.0f) == 0.0f);
  CHECK(cpu::exp_approx(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(cpu::exp_approx(89.0f) == std::numeric_limits<float>::infinity());
  CHECK(cpu::exp_approx(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(cpu::exp_approx(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("the row functions match libm element by element and in their sums") {
  // Lengths around the 8-wide blocks, and one of a vocabulary's size.
  for (std::int64_t n : {0, 1, 7, 8, 9, 37, 37000}) {
    CAPTURE(n);
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) x[static_cast<std::size_t>(k)] = std::sin(0.37f * static_cast<float>(k)) * 12.0f;
    const float shift = 3.5f, scale = 0.25f, sub = 1e-3f;
    double want_sum = 0;
    for (float v : x) want_sum += static_cast<double>(std::exp(v - shift));
    CHECK(cpu::sum_exp(x.data(), shift, n) == doctest::Approx(want_sum).epsilon(1e-6));

    std::vector<float> out(x.size()), plain(x.size());
    cpu::exp_affine(x.data(), shift, scale, sub, out.data(), n);
    cpu::exp_affine(x.data(), shift, 1.0f, 0.0f, plain.data(), n);  // exp(x - shift) itself
    for (std::size_t k = 0; k < x.size(); ++k) {
      const float e = std::exp(x[k] - shift);
      CHECK(ulps(plain[k], e) <= 2);
      CHECK(std::abs(out[k] - scale * (e - sub)) <= 1e-6f * std::abs(scale) * (e + sub));  // e - sub may cancel
    }
  }
}

TEST_CASE("exp_affine works in place") {
  std::vector<float> x = {0.0f, 1.0f, -2.0f, 5.0f};
  const std::vector<float> copy = x;
  cpu::exp_affine(x.data(), 1.0f, 2.0f, 0.5f, x.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t k = 0; k < x.size(); ++k)
    CHECK(x[k] == doctest::Approx(2.0 * (std::exp(copy[k] - 1.0) - 0.5)).epsilon(1e-6));
}

TEST_CASE("max_row and sum_row equal the row's maximum and sum") {
  for (std::int64_t n : {1, 7, 8, 9, 37, 8000}) {
    CAPTURE(n);
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k)
      x[static_cast<std::size_t>(k)] = std::cos(0.91f * static_cast<float>(k)) * 7.0f - 1.0f;
    // The maximum placed at each end in turn, so that every lane and the tail are exercised.
    for (std::size_t at : {std::size_t{0}, x.size() - 1}) {
      std::vector<float> y = x;
      y[at] = 100.0f;
      CHECK(cpu::max_row(y.data(), n) == 100.0f);
    }
    CHECK(cpu::max_row(x.data(), n) == *std::max_element(x.begin(), x.end()));
    double want = 0;
    for (float v : x) want += static_cast<double>(v);
    CHECK(cpu::sum_row(x.data(), n) == doctest::Approx(want).epsilon(1e-12));
  }
  // Known values: an empty row, integers (exact in any order), and a NaN skipped by the maximum.
  CHECK(cpu::max_row(nullptr, 0) == -std::numeric_limits<float>::infinity());
  CHECK(cpu::sum_row(nullptr, 0) == 0.0);
  const std::vector<float> ints = {3, -1, 4, 1, -5, 9, 2, 6, 5, 3, 5};
  CHECK(cpu::sum_row(ints.data(), 11) == 32.0);
  CHECK(cpu::max_row(ints.data(), 11) == 9.0f);
  const std::vector<float> with_nan = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  CHECK(cpu::max_row(with_nan.data(), 3) == 2.0f);
}
