// cast: conversion with known roundings, and the straight-through gradient.
#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::tolerance_for;

TEST_CASE("cast to bf16 rounds to nearest even") {
  const float one = 1.0f, ulp = std::ldexp(1.0f, -7);  // bf16 keeps 7 mantissa bits: 2^-7 at 1
  const Tensor x = Tensor::from_vector<float>(
      {7}, {one, one + ulp / 2,  // halfway between 1 (even) and 1 + ulp (odd): down
            one + 3 * ulp / 2,   // halfway between 1 + ulp (odd) and 1 + 2 ulp (even): up
            one + ulp / 2 + std::ldexp(1.0f, -20),  // just above halfway: up
            2.0f - std::ldexp(1.0f, -9),            // a quarter ulp below 2: up to 2
            -(one + 3 * ulp / 2), 0.1f});
  const Tensor y = cast(x, DType::bf16);
  CHECK(y.dtype() == DType::bf16);
  // 0.1 = 0x3DCCCCCD in f32; bf16 0x3DCD = 0.10009765625.
  CHECK_TENSOR_NEAR(cast(y, DType::f32), std::vector<double>{1.0, 1.0, 1.0 + 2.0 / 128, 1.0 + 1.0 / 128, 2.0,
                                                             -(1.0 + 2.0 / 128), 0.10009765625},
                    testing::Tolerance{0.0, 0.0});
}

TEST_CASE("cast to its own dtype is the tensor itself") {
  Tensor x = Tensor::from_vector<float>({2}, {1.5f, -2.0f});
  CHECK(cast(x, DType::f32).same_storage(x));
}

TEST_CASE("cast passes the gradient straight through in the input dtype") {
  Tensor x = Tensor::from_vector<float>({3}, {0.1f, 1.3f, -7.7f});
  x.set_requires_grad();
  Tensor y = cast(cast(x, DType::bf16), DType::f32);
  // The outer cast hands its gradient to a bf16 tensor, so it arrives in bf16: 0.3 is rounded,
  // the others are bf16 values already.
  y.backward(Tensor::from_vector<float>({3}, {0.3f, -1.0f, 2.5f}));
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == DType::f32);
  CHECK_TENSOR_NEAR(x.grad(), std::vector<double>{0.30078125, -1.0, 2.5}, testing::Tolerance{0.0, 0.0});
}

TEST_CASE("cast gradient check through f32 and back") {
  // f64 -> f32 -> f64: the rounding to f32 is far below eps = 1e-2, so central differences see
  // the identity; the analytic gradient is the identity too.
  testing::GradcheckOptions options;
  options.eps = 1e-2;
  options.atol = 1e-4;
  options.rtol = 1e-4;
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& in) { return mul(cast(cast(in[0], DType::f32), DType::f64), in[0]); },
      {testing::random_tensor({3, 4}, 7, -2, 2, DType::f64)}, options);
}

TEST_CASE("cast of a tensor that requires a gradient to an integer dtype is refused") {
  Tensor x = Tensor::from_vector<float>({2}, {1.0f, 2.0f});
  x.set_requires_grad();
  CHECK_THROWS_WITH_AS(cast(x, DType::i64), doctest::Contains("cast: f32[2] on cpu requires a gradient"), Error);
  CHECK(cast(x.detach(), DType::i64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2});
}
