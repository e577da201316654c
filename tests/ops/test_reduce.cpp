#include <doctest/doctest.h>

#include <numeric>

#include "attnlab/attnlab.h"
#include "attnlab/threads.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

// The [2, 3, 4] tensor with x[i][j][k] = 12 i + 4 j + k.
Tensor iota234(DType dtype) {
  std::vector<double> v(24);
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::from_vector<double>({2, 3, 4}, v).to(dtype);
}

}  // namespace

TEST_CASE("sum and mean of all elements") {
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor x = iota234(dtype);
    Tensor s = sum(x);
    CHECK(s.shape() == Shape{});
    CHECK(s.dtype() == dtype);
    CHECK(s.item() == 276.0);
    Tensor m = mean(x);
    CHECK(m.shape() == Shape{});
    CHECK(m.item() == 11.5);
  }
  CHECK(sum(Tensor::full({5}, 0.5)).item() == 2.5);
  CHECK(sum(Tensor::zeros({0, 3})).item() == 0.0);
  // A long f32 row: a running f32 sum of a million 0.1f drifts by ~1%; double accumulation
  // keeps it to f32 rounding.
  Tensor tenths = Tensor::full({1000000}, 0.1);
  CHECK(sum(tenths).item() == doctest::Approx(100000.0).epsilon(1e-6));
  CHECK(mean(tenths).item() == doctest::Approx(0.1).epsilon(1e-6));
}

TEST_CASE("sum and mean along each axis") {
  for (DType dtype : {DType::f32, DType::f64}) {
    const auto tol = tolerance_for(dtype);
    Tensor x = iota234(dtype);
    CHECK(sum(x, 0).shape() == Shape{3, 4});
    CHECK_TENSOR_NEAR(sum(x, 0), {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}, tol);
    CHECK_TENSOR_NEAR(mean(x, 0), {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, tol);
    CHECK(sum(x, 1).shape() == Shape{2, 4});
    CHECK_TENSOR_NEAR(sum(x, 1), {12, 15, 18, 21, 48, 51, 54, 57}, tol);
    CHECK_TENSOR_NEAR(mean(x, 1), {4, 5, 6, 7, 16, 17, 18, 19}, tol);
    CHECK(sum(x, 2).shape() == Shape{2, 3});
    CHECK_TENSOR_NEAR(sum(x, 2), {6, 22, 38, 54, 70, 86}, tol);
    CHECK_TENSOR_NEAR(mean(x, -1), {1.5, 5.5, 9.5, 13.5, 17.5, 21.5}, tol);
    // keepdim keeps the axis with extent 1 and the same values.
    CHECK(sum(x, 0, true).shape() == Shape{1, 3, 4});
    CHECK(mean(x, 1, true).shape() == Shape{2, 1, 4});
    CHECK(sum(x, -1, true).shape() == Shape{2, 3, 1});
    CHECK_TENSOR_NEAR(sum(x, 0, true), {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}, tol);
    CHECK_TENSOR_NEAR(mean(x, 1, true), {4, 5, 6, 7, 16, 17, 18, 19}, tol);
    CHECK_TENSOR_NEAR(sum(x, 2, true), {6, 22, 38, 54, 70, 86}, tol);
  }
  // Rank 1 down to rank 0.
  Tensor v = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  CHECK(sum(v, 0).shape() == Shape{});
  CHECK(sum(v, 0).item() == 10.0);
  CHECK(mean(v, 0, true).shape() == Shape{1});
  CHECK(mean(v, 0, true).item() == 2.5);
}

TEST_CASE("long reductions along an axis match the full sum") {
  // Rows longer than a summation block, and a strided axis longer than a block.
  Tensor x = random_tensor({3, 10000}, 5);
  const auto values = x.to_vector<double>();
  Tensor rows = sum(x, 1);
  Tensor cols = sum(transpose(x, 0, 1), 0);
  for (int r = 0; r < 3; ++r) {
    double want = 0;
    for (int k = 0; k < 10000; ++k) want += values[static_cast<std::size_t>(r * 10000 + k)];
    CHECK(rows.to_vector<double>()[static_cast<std::size_t>(r)] == doctest::Approx(want).epsilon(1e-6));
    CHECK(cols.to_vector<double>()[static_cast<std::size_t>(r)] == doctest::Approx(want).epsilon(1e-6));
  }
}

TEST_CASE("reductions do not depend on the thread count") {
  const int saved = num_threads();
  Tensor x = random_tensor({300, 1000}, 31);  // 300000 elements, f32
  Tensor y = random_tensor({3, 20000}, 32);
  auto run = [&] {
    return std::vector<std::vector<float>>{sum(x).to_vector<float>(),       mean(x).to_vector<float>(),
                                           sum(x, 0).to_vector<float>(),    sum(x, 1).to_vector<float>(),
                                           mean(x, 0, true).to_vector<float>(), sum(y, 1).to_vector<float>(),
                                           sum(y, 0).to_vector<float>()};
  };
  set_num_threads(1);
  const auto one = run();
  set_num_threads(2);
  const auto two = run();
  set_num_threads(saved);
  for (std::size_t i = 0; i < one.size(); ++i) {
    CAPTURE(i);
    CHECK(one[i] == two[i]);
  }
}

TEST_CASE("reduce gradients (finite differences)") {
  Tensor x = random_tensor({2, 3, 4}, 41);
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return sum(v[0]); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return mean(v[0]); }, {x});
  for (int axis = -1; axis < 3; ++axis) {
    CAPTURE(axis);
    for (bool keepdim : {false, true}) {
      CAPTURE(keepdim);
      CHECK_GRADCHECK([&](const std::vector<Tensor>& v) { return sum(v[0], axis, keepdim); }, {x});
      CHECK_GRADCHECK([&](const std::vector<Tensor>& v) { return mean(v[0], axis, keepdim); }, {x});
    }
  }
  // Composed with a product so that the gradient depends on the values.
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return mean(mul(v[0], v[0]), 1); }, {x});
}

TEST_CASE("sum backward broadcasts the gradient") {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  x.set_requires_grad(true);
  mean(x).backward();
  CHECK_TENSOR_NEAR(x.grad(), {1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6}, tolerance_for(DType::f32));
  x.zero_grad();
  Tensor s = sum(x, 1);
  s.backward(Tensor::from_vector<float>({2}, {10, 20}));
  CHECK_TENSOR_NEAR(x.grad(), {10, 10, 10, 20, 20, 20}, tolerance_for(DType::f32));
}

TEST_CASE("reduce errors name the op and the shape") {
  Tensor x = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(sum(x, 3), doctest::Contains("sum: axis 3 is out of range for shape [2, 3, 4]"), Error);
  CHECK_THROWS_WITH_AS(mean(x, -4), doctest::Contains("mean: axis -4 is out of range for shape [2, 3, 4]"), Error);
  CHECK_THROWS_WITH_AS(sum(Tensor::zeros({3}, DType::i32)), doctest::Contains("sum: expected a floating tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(mean(Tensor::zeros({3}, DType::bf16), 0), doctest::Contains("mean: dtype bf16 is not supported"),
                       Error);
  CHECK_THROWS_WITH_AS(sum(Tensor()), doctest::Contains("sum: x is undefined"), Error);
}
