// The branch-free float functions of cpu/vector_math.h (the core's rows and the compiled
// score-expression kernels use them) against the C library, over their whole ranges and at the ends.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/vector_math.h"

namespace {

std::int64_t ulps(float a, float b) {
  return std::abs(static_cast<std::int64_t>(std::bit_cast<std::int32_t>(a)) -
                  static_cast<std::int64_t>(std::bit_cast<std::int32_t>(b)));
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The largest distance in ulp over x = from, from * step or + step, ... up to `to`.
template <typename F, typename G>
std::int64_t worst(F mine, G libm, float from, float to, float step, bool geometric, float& at) {
  std::int64_t w = 0;
  for (float x = from; x <= to; x = std::nextafter(geometric ? x * step : x + step, to)) {
    const std::int64_t d = ulps(mine(x), libm(x));
    if (d > w) w = d, at = x;
  }
  return w;
}

}  // namespace

TEST_CASE("vector_math log is within 2 ulp of logf from subnormals to the largest float") {
  float at = 0;
  CHECK(worst(attnlab_vm_log, [](float x) { return std::log(x); }, 1e-44f, 3e38f, 1.0009f, true, at) <= 2);
  CHECK(worst(attnlab_vm_log, [](float x) { return std::log(x); }, 1e-45f, 1e-38f, 1.01f, true, at) <= 2);
  INFO("worst at ", at);
  CHECK(worst(attnlab_vm_log, [](float x) { return std::log(x); }, 0.5f, 2.0f, 1e-5f, false, at) <= 2);
  CHECK(attnlab_vm_log(1.0f) == 0.0f);
  CHECK(attnlab_vm_log(0.0f) == -kInf);
  CHECK(attnlab_vm_log(kInf) == kInf);
  CHECK(std::isnan(attnlab_vm_log(-1.0f)));
  CHECK(std::isnan(attnlab_vm_log(kNaN)));
}

TEST_CASE("vector_math tanh is within 4 ulp of tanhf, and odd") {
  float at = 0;
  const auto libm = [](float x) { return std::tanh(x); };
  // Near 0 on a geometric grid (relative accuracy of tiny values), then the whole working range.
  CHECK(worst(attnlab_vm_tanh, libm, 1e-30f, 0.3f, 1.001f, true, at) <= 4);
  INFO("worst at ", at);
  CHECK(worst(attnlab_vm_tanh, libm, -12.0f, 12.0f, 1e-4f, false, at) <= 4);
  CHECK(attnlab_vm_tanh(0.0f) == 0.0f);
  CHECK(attnlab_vm_tanh(-0.7f) == -attnlab_vm_tanh(0.7f));
  CHECK(attnlab_vm_tanh(kInf) == 1.0f);
  CHECK(attnlab_vm_tanh(-kInf) == -1.0f);
  CHECK(std::isnan(attnlab_vm_tanh(kNaN)));
}

TEST_CASE("vector_math sigmoid is within 4 ulp of 1 / (1 + expf(-x)), and exp within 2 of expf") {
  float at = 0;
  CHECK(worst(attnlab_vm_sigmoid, [](float x) { return 1.0f / (1.0f + std::exp(-x)); }, -80.0f, 80.0f, 1e-3f, false, at) <= 4);
  INFO("worst at ", at);
  CHECK(worst(attnlab_vm_exp, [](float x) { return std::exp(x); }, -87.0f, 88.0f, 1e-3f, false, at) <= 2);
  CHECK(attnlab_vm_sigmoid(0.0f) == 0.5f);
  CHECK(attnlab_vm_sigmoid(-kInf) == 0.0f);
  CHECK(attnlab_vm_sigmoid(kInf) == 1.0f);
}
