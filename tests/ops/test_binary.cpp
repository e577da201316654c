#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

TEST_CASE("add sub mul known values with bias broadcasting") {
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor bias = Tensor::from_vector<float>({3}, {10, 20, 30});
  CHECK_TENSOR_NEAR(add(a, bias), {11, 22, 33, 14, 25, 36}, tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(add(bias, a), {11, 22, 33, 14, 25, 36}, tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(sub(a, bias), {-9, -18, -27, -6, -15, -24}, tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(sub(bias, a), {9, 18, 27, 6, 15, 24}, tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(mul(a, bias), {10, 40, 90, 40, 100, 180}, tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(mul(a, a), {1, 4, 9, 16, 25, 36}, tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(scale(a, -0.5), {-0.5, -1, -1.5, -2, -2.5, -3}, tolerance_for(DType::f32));
  Tensor one = Tensor::full({1}, 2.0);
  CHECK_TENSOR_NEAR(mul(a, one), {2, 4, 6, 8, 10, 12}, tolerance_for(DType::f32));
  Tensor row = Tensor::from_vector<float>({1, 3}, {1, 1, 1});
  CHECK(add(a, row).shape() == Shape{2, 3});
}

TEST_CASE("binary ops name both shapes on mismatch") {
  Tensor a = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH_AS(add(a, Tensor::zeros({2})), doctest::Contains("add: shapes [2, 3] and [2] do not broadcast"),
                       Error);
  CHECK_THROWS_WITH_AS(mul(a, Tensor::zeros({2, 3}, DType::f64)), doctest::Contains("mul: dtypes differ"), Error);
  CHECK_THROWS_WITH_AS(add(Tensor::zeros({3}, DType::i32), Tensor::zeros({3}, DType::i32)),
                       doctest::Contains("expected a floating tensor"), Error);
}

TEST_CASE("binary ops gradients (finite differences)") {
  Tensor a = random_tensor({4, 5}, 1);
  Tensor b = random_tensor({4, 5}, 2);
  Tensor bias = random_tensor({5}, 3);
  for (auto fn : {add, sub, mul}) {
    CHECK_GRADCHECK([&](const std::vector<Tensor>& x) { return fn(x[0], x[1]); }, {a, b});
    CHECK_GRADCHECK([&](const std::vector<Tensor>& x) { return fn(x[0], x[1]); }, {a, bias});
    CHECK_GRADCHECK([&](const std::vector<Tensor>& x) { return fn(x[1], x[0]); }, {a, bias});
  }
  CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return scale(x[0], 1.7); }, {a});
}

TEST_CASE("add_inplace accumulates and checks shapes") {
  Tensor d = Tensor::full({3}, 1.0);
  add_inplace(d, Tensor::full({3}, 2.0));
  CHECK(d.to_vector<float>() == std::vector<float>(3, 3.0f));
  CHECK_THROWS_WITH_AS(add_inplace(d, Tensor::full({4}, 2.0)), doctest::Contains("shapes differ: [3] and [4]"),
                       Error);
}
