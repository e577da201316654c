// gradient_clip on the CPU: the norm and PyTorch's clipping factor from summed squares, the error
// for a norm that is not finite, and bad arguments. (An optimizer op outside the tape: it has no
// gradient to check.) tests/cuda holds its CUDA kernel to these values bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attnlab/attnlab.h"

using namespace attnlab;

namespace {

Tensor squares_of(double s) { return Tensor::full(Shape{}, s, DType::f64); }

}  // namespace

TEST_CASE("gradient_clip gives the norm and min(1, max_norm / (norm + 1e-6))") {
  const GradientClip c = gradient_clip(squares_of(25.0), 1.0);
  CHECK(c.norm.shape() == Shape{});
  CHECK(c.norm.dtype() == DType::f64);
  CHECK(c.norm.item() == 5.0);
  CHECK(c.factor.item() == 1.0 / (5.0 + 1e-6));  // the same operations, so the same bits
  CHECK(gradient_clip(squares_of(25.0), 10.0).factor.item() == 1.0);  // below the threshold: unchanged
  CHECK(gradient_clip(squares_of(0.0), 0.5).factor.item() == 1.0);    // no gradient at all
  // Just at the threshold the 1e-6 keeps the factor below 1 (as PyTorch's clip_grad_norm_).
  const double at = gradient_clip(squares_of(4.0), 2.0).factor.item();
  CHECK(at < 1.0);
  CHECK(at == doctest::Approx(1.0).epsilon(1e-6));
  // A value that is not a perfect square: sqrt correctly rounded.
  CHECK(gradient_clip(squares_of(2.0), 0.25).norm.item() == std::sqrt(2.0));
}

TEST_CASE("gradient_clip refuses a norm that is not finite and bad arguments") {
  for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(gradient_clip(squares_of(bad), 1.0),
                         doctest::Contains("gradient_clip: the gradients' L2 norm is not finite (inf or NaN)"), Error);
  }
  CHECK_THROWS_WITH_AS(gradient_clip(Tensor::full(Shape{}, 4.0, DType::f32), 1.0),
                       doctest::Contains("squares must be a [] f64 tensor, got f32[] on cpu"), Error);
  CHECK_THROWS_WITH_AS(gradient_clip(Tensor::full({1}, 4.0, DType::f64), 1.0),
                       doctest::Contains("squares must be a [] f64 tensor"), Error);
  CHECK_THROWS_WITH_AS(gradient_clip(Tensor(), 1.0), doctest::Contains("gradient_clip"), Error);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(gradient_clip(squares_of(4.0), bad),
                         doctest::Contains("gradient_clip: max_norm must be finite and > 0"), Error);
  }
}
