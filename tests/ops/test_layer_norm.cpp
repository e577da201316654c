#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

TEST_CASE("layer_norm known values") {
  // Row [1, 2, 3, 4]: mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
  // Row [2, 2, 2, 2]: mean 2, variance 0, so y = 0 (eps keeps it finite).
  const double eps = 1e-5;
  const double r = 1.0 / std::sqrt(1.25 + eps);
  Tensor x = Tensor::from_vector<double>({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  const std::vector<double> norm = {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r, 0, 0, 0, 0};
  CHECK_TENSOR_NEAR(layer_norm(x, Tensor(), Tensor(), eps), norm, tolerance_for(DType::f64));

  Tensor gamma = Tensor::from_vector<double>({4}, {1.0, 2.0, -1.0, 0.5});
  Tensor beta = Tensor::from_vector<double>({4}, {0.0, 0.1, 0.2, -0.3});
  std::vector<double> affine(8), scaled(8), shifted(8);
  const auto g = gamma.to_vector<double>();
  const auto b = beta.to_vector<double>();
  for (std::size_t i = 0; i < 8; ++i) {
    affine[i] = norm[i] * g[i % 4] + b[i % 4];
    scaled[i] = norm[i] * g[i % 4];
    shifted[i] = norm[i] + b[i % 4];
  }
  CHECK_TENSOR_NEAR(layer_norm(x, gamma, beta, eps), affine, tolerance_for(DType::f64));
  CHECK_TENSOR_NEAR(layer_norm(x, gamma, Tensor(), eps), scaled, tolerance_for(DType::f64));
  CHECK_TENSOR_NEAR(layer_norm(x, Tensor(), beta, eps), shifted, tolerance_for(DType::f64));

  // f32, rank 3, with a larger eps: [3, 5, 7] has mean 5 and variance 8/3.
  Tensor xf = Tensor::from_vector<float>({1, 1, 3}, {3, 5, 7});
  const double rf = 1.0 / std::sqrt(8.0 / 3.0 + 0.1);
  CHECK_TENSOR_NEAR(layer_norm(xf, Tensor(), Tensor(), 0.1), {-2 * rf, 0.0, 2 * rf}, tolerance_for(DType::f32));
}

TEST_CASE("layer_norm output has zero mean and unit variance per row") {
  Tensor x = random_tensor({3, 4, 16}, 5, -4.0, 7.0, DType::f64);
  const auto y = layer_norm(x, Tensor(), Tensor(), 0.0).to_vector<double>();
  for (std::size_t r = 0; r < 12; ++r) {
    double mean = 0, var = 0;
    for (std::size_t j = 0; j < 16; ++j) mean += y[r * 16 + j] / 16;
    for (std::size_t j = 0; j < 16; ++j) var += (y[r * 16 + j] - mean) * (y[r * 16 + j] - mean) / 16;
    CHECK(std::abs(mean) < 1e-12);
    CHECK(var == doctest::Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("layer_norm gradients (finite differences)") {
  Tensor x = random_tensor({3, 5}, 31, -2.0, 2.0);
  Tensor gamma = random_tensor({5}, 32, 0.5, 1.5);
  Tensor beta = random_tensor({5}, 33);
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); }, {x, gamma, beta});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return layer_norm(in[0], Tensor(), Tensor()); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], Tensor()); }, {x, gamma});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return layer_norm(in[0], Tensor(), in[1]); }, {x, beta});
  // Rank 3 input; only the parameters differentiated (x a constant).
  Tensor x3 = random_tensor({2, 2, 4}, 34, -1.0, 3.0, DType::f64);
  CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return layer_norm(x3, in[0], in[1], 1e-3); },
                  {random_tensor({4}, 35), random_tensor({4}, 36)});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2], 0.5); },
                  {random_tensor({2, 2, 4}, 37), random_tensor({4}, 38), random_tensor({4}, 39)});
}

TEST_CASE("layer_norm gradients do not depend on the thread count") {
  // Large enough that the kernels split across threads.
  Tensor x = random_tensor({64, 1024}, 41, -2.0, 2.0);
  Tensor gamma = random_tensor({1024}, 42, 0.5, 1.5);
  Tensor beta = random_tensor({1024}, 43);
  Tensor dy = random_tensor({64, 1024}, 44);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor xg = x.clone(), gg = gamma.clone(), bg = beta.clone();
    xg.set_requires_grad(true);
    gg.set_requires_grad(true);
    bg.set_requires_grad(true);
    layer_norm(xg, gg, bg).backward(dy);
    return std::vector<std::vector<float>>{xg.grad().to_vector<float>(), gg.grad().to_vector<float>(),
                                           bg.grad().to_vector<float>()};
  };
  const int saved = num_threads();
  const auto one = run(1);
  const auto two = run(2);
  const auto four = run(4);
  set_num_threads(saved);
  for (std::size_t k = 0; k < 3; ++k) {
    CAPTURE(k);
    CHECK(one[k] == two[k]);
    CHECK(one[k] == four[k]);
  }
}

TEST_CASE("layer_norm errors name the op and the shapes") {
  Tensor x = Tensor::zeros({2, 4});
  CHECK_THROWS_WITH_AS(layer_norm(x, Tensor::zeros({3}), Tensor()),
                       doctest::Contains("layer_norm: gamma must have shape [4] (the last axis of x [2, 4]), got [3]"),
                       Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, Tensor(), Tensor::zeros({1, 4})),
                       doctest::Contains("layer_norm: beta must have shape [4] (the last axis of x [2, 4]), got [1, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, Tensor::zeros({4}, DType::f64), Tensor()),
                       doctest::Contains("layer_norm: gamma dtype differs from x"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, Tensor(), Tensor(), -1.0),
                       doctest::Contains("layer_norm: eps must be finite and >= 0, got -1"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(Tensor::zeros({4}, DType::i64), Tensor(), Tensor()),
                       doctest::Contains("layer_norm: expected a floating tensor"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(Tensor::zeros({2, 4}, DType::bf16), Tensor(), Tensor()),
                       doctest::Contains("layer_norm: dtype bf16 is not supported on cpu"), Error);
}
