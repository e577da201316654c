#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/attnlab.h"
#include "support/tensor_testing.h"

using namespace attnlab;

// The update written out longhand, the textbook way (bias-corrected moments), for comparison.
TEST_CASE("adam_step matches the textbook update over several steps") {
  const std::vector<double> p0 = {0.5, -1.0, 2.0}, grads[3] = {{0.1, -0.2, 0.3}, {0.05, 0.4, -0.1}, {-0.3, 0.0, 0.2}};
  Tensor p = Tensor::from_vector<double>({3}, p0);
  Tensor m = Tensor::zeros({3}, DType::f64), v = Tensor::zeros({3}, DType::f64);
  std::vector<double> ep = p0, em(3, 0.0), ev(3, 0.0);
  const double lr = 0.01, b1 = 0.9, b2 = 0.98, eps = 1e-9;
  for (int t = 1; t <= 3; ++t) {
    const auto& g = grads[t - 1];
    adam_step(p, Tensor::from_vector<double>({3}, g), m, v, {lr, b1, b2, eps, t});
    for (int i = 0; i < 3; ++i) {
      em[i] = b1 * em[i] + (1 - b1) * g[i];
      ev[i] = b2 * ev[i] + (1 - b2) * g[i] * g[i];
      const double mh = em[i] / (1 - std::pow(b1, t)), vh = ev[i] / (1 - std::pow(b2, t));
      ep[i] -= lr * mh / (std::sqrt(vh) + eps);
    }
  }
  CHECK_TENSOR_NEAR(p, ep, testing::Tolerance{1e-12, 1e-12});
  CHECK_TENSOR_NEAR(m, em, testing::Tolerance{1e-15, 1e-12});
  CHECK_TENSOR_NEAR(v, ev, testing::Tolerance{1e-15, 1e-12});
  // The first step moves every coordinate with a non-zero gradient by about lr (sign of -g).
  Tensor q = Tensor::from_vector<double>({1}, {0.0}), qm = Tensor::zeros({1}, DType::f64), qv = Tensor::zeros({1}, DType::f64);
  adam_step(q, Tensor::from_vector<double>({1}, {3.0}), qm, qv, {lr, b1, b2, eps, 1});
  CHECK(q.item() == doctest::Approx(-lr).epsilon(1e-6));
}

TEST_CASE("adam_step names mismatched shapes and bad hyperparameters") {
  Tensor p = Tensor::zeros({3}), m = Tensor::zeros({3}), v = Tensor::zeros({3});
  CHECK_THROWS_WITH_AS(adam_step(p, Tensor::zeros({4}), m, v, {}), doctest::Contains("shapes differ: [3] and [4]"), Error);
  CHECK_THROWS_WITH_AS(adam_step(p, Tensor::zeros({3}), m, v, {.step = 0}), doctest::Contains("step must be >= 1"), Error);
}
