#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/error.h"
#include "attnlab/nmt/train/optimizer.h"

using namespace attnlab;
using namespace attnlab::nmt;

TEST_CASE("the learning rate warms up linearly then decays with the inverse square root") {
  const double peak = std::pow(512.0, -0.5) * std::pow(4000.0, -0.5);
  CHECK(transformer_lr(4000, 512, 4000) == doctest::Approx(peak));
  CHECK(transformer_lr(1, 512, 4000) == doctest::Approx(std::pow(512.0, -0.5) * std::pow(4000.0, -1.5)));
  CHECK(transformer_lr(2000, 512, 4000) == doctest::Approx(peak / 2));
  CHECK(transformer_lr(16000, 512, 4000) == doctest::Approx(peak / 2));
  CHECK(transformer_lr(16000, 512, 4000, 2.0) == doctest::Approx(peak));
  CHECK_THROWS_AS(transformer_lr(0, 512, 4000), Error);
}

TEST_CASE("the optimizer updates parameters with gradients and restores its state") {
  Tensor a = Tensor::full({2}, 1.0, DType::f64), b = Tensor::full({3}, 1.0, DType::f64);
  a.set_requires_grad();
  b.set_requires_grad();
  AdamOptimizer opt({{"a", a}, {"b", b}}, {});
  a.set_grad(Tensor::full({2}, 0.5, DType::f64));
  opt.step(0.1);
  CHECK(opt.steps() == 1);
  CHECK(a.to_vector<double>()[0] == doctest::Approx(0.9).epsilon(1e-6));
  CHECK(b.to_vector<double>()[0] == 1.0);  // no gradient: untouched

  AdamOptimizer copy({{"a", a.detach()}, {"b", b.detach()}}, {});
  copy.load_state(opt.first_moments(), opt.second_moments(), opt.steps());
  CHECK(copy.steps() == 1);
  CHECK(copy.first_moments()[0].second.to_vector<double>() == opt.first_moments()[0].second.to_vector<double>());
  AdamOptimizer::Named wrong = {{"a", Tensor::zeros({2}, DType::f64)}, {"b", Tensor::zeros({4}, DType::f64)}};
  CHECK_THROWS_WITH_AS(copy.load_state(wrong, wrong, 3), doctest::Contains("'b' [4] does not match parameter 'b' [3]"),
                       Error);
  CHECK(copy.steps() == 1);
}
