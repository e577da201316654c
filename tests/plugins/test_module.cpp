#include <doctest/doctest.h>

#include "attnlab/init.h"
#include "attnlab/nn/linear.h"
#include "attnlab/ops.h"

using namespace attnlab;

TEST_CASE("modules collect named parameters and propagate the mode") {
  Generator g(3);
  nn::Linear layer(4, 3, true, g);
  const auto params = layer.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].first == "weight");
  CHECK(params[0].second.shape() == Shape({3, 4}));
  CHECK(params[1].first == "bias");
  CHECK(layer.parameter_count() == 15);
  CHECK(params[0].second.requires_grad());
  layer.eval();
  CHECK_FALSE(layer.training());
  // Xavier bound sqrt(6 / 7).
  for (double v : params[0].second.to_vector<double>()) CHECK(std::abs(v) <= std::sqrt(6.0 / 7.0));
}

TEST_CASE("initialisation depends only on the seed") {
  Generator a(9), b(9), c(10);
  CHECK(uniform({50}, -1, 1, a).to_vector<float>() == uniform({50}, -1, 1, b).to_vector<float>());
  CHECK(uniform({50}, -1, 1, a).to_vector<float>() != uniform({50}, -1, 1, c).to_vector<float>());
  Generator n(4);
  const auto v = normal({20000}, 2.0, 0.5, n, DType::f64).to_vector<double>();
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  s = std::sqrt(s / static_cast<double>(v.size()));
  CHECK(m == doctest::Approx(2.0).epsilon(0.01));
  CHECK(s == doctest::Approx(0.5).epsilon(0.03));
}
