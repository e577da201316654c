#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

TEST_CASE("rms_norm known values") {
  // Row [1, 2, 3, 4]: mean square (1 + 4 + 9 + 16) / 4 = 7.5. Row [2, 2, 2, 2]: mean square 4, so
  // y = 1 everywhere (unlike layer_norm, a constant row keeps its sign and scale).
  const double eps = 1e-6;
  const double r1 = 1.0 / std::sqrt(7.5 + eps), r2 = 1.0 / std::sqrt(4.0 + eps);
  Tensor x = Tensor::from_vector<double>({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  const std::vector<double> norm = {r1, 2 * r1, 3 * r1, 4 * r1, 2 * r2, 2 * r2, 2 * r2, 2 * r2};
  CHECK_TENSOR_NEAR(rms_norm(x, Tensor(), Tensor(), eps), norm, tolerance_for(DType::f64));
  Tensor gamma = Tensor::from_vector<double>({4}, {1.0, 2.0, -1.0, 0.5});
  Tensor beta = Tensor::from_vector<double>({4}, {0.0, 0.1, 0.2, -0.3});
  std::vector<double> scaled(8), affine(8);
  for (std::size_t i = 0; i < 8; ++i) {
    scaled[i] = norm[i] * gamma.to_vector<double>()[i % 4];
    affine[i] = scaled[i] + beta.to_vector<double>()[i % 4];
  }
  CHECK_TENSOR_NEAR(rms_norm(x, gamma, Tensor(), eps), scaled, tolerance_for(DType::f64));
  CHECK_TENSOR_NEAR(rms_norm(x, gamma, beta, eps), affine, tolerance_for(DType::f64));
  // f32, rank 3, a larger eps: [3, -4] has mean square 12.5.
  const double rf = 1.0 / std::sqrt(12.5 + 0.1);
  CHECK_TENSOR_NEAR(rms_norm(Tensor::from_vector<float>({1, 1, 2}, {3, -4}), Tensor(), Tensor(), 0.1),
                    {3 * rf, -4 * rf}, tolerance_for(DType::f32));
}

TEST_CASE("rms_norm output has unit mean square per row and equals layer_norm on centred rows") {
  Tensor x = random_tensor({3, 4, 16}, 5, -4.0, 7.0, DType::f64);
  const auto y = rms_norm(x, Tensor(), Tensor(), 0.0).to_vector<double>();
  for (std::size_t r = 0; r < 12; ++r) {
    double ms = 0;
    for (std::size_t j = 0; j < 16; ++j) ms += y[r * 16 + j] * y[r * 16 + j] / 16;
    CHECK(ms == doctest::Approx(1.0).epsilon(1e-12));
  }
  // A row with mean 0 has variance = mean square: the two norms agree.
  Tensor centred = Tensor::from_vector<double>({1, 4}, {-3, 1, 0.5, 1.5});
  CHECK_TENSOR_NEAR(rms_norm(centred, Tensor(), Tensor(), 1e-5),
                    layer_norm(centred, Tensor(), Tensor(), 1e-5).to_vector<double>(), tolerance_for(DType::f64));
}

TEST_CASE("rms_norm gradients (finite differences)") {
  Tensor x = random_tensor({3, 5}, 31, -2.0, 2.0);
  Tensor gamma = random_tensor({5}, 32, 0.5, 1.5);
  Tensor beta = random_tensor({5}, 33);
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return rms_norm(in[0], in[1]); }, {x, gamma});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return rms_norm(in[0], Tensor()); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return rms_norm(in[0], in[1], in[2]); }, {x, gamma, beta});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return rms_norm(in[0], in[1], in[2], 0.5); },
                  {random_tensor({2, 2, 4}, 37), random_tensor({4}, 38), random_tensor({4}, 39)});
}

TEST_CASE("rms_norm gradients do not depend on the thread count") {
  testing::ThreadCountGuard guard;
  Tensor x = random_tensor({64, 1024}, 41, -2.0, 2.0);
  Tensor gamma = random_tensor({1024}, 42, 0.5, 1.5);
  Tensor dy = random_tensor({64, 1024}, 44);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor xg = x.clone(), gg = gamma.clone();
    xg.set_requires_grad(true);
    gg.set_requires_grad(true);
    rms_norm(xg, gg).backward(dy);
    return std::vector<std::vector<float>>{xg.grad().to_vector<float>(), gg.grad().to_vector<float>()};
  };
  CHECK(run(1) == run(2));
  CHECK(run(1) == run(4));
}

TEST_CASE("rms_norm errors name the op and the shapes") {
  Tensor x = Tensor::zeros({2, 4});
  CHECK_THROWS_WITH_AS(rms_norm(x, Tensor::zeros({3})),
                       doctest::Contains("rms_norm: gamma must have shape [4] (the last axis of x [2, 4]), got [3]"),
                       Error);
  CHECK_THROWS_WITH_AS(rms_norm(x, Tensor(), Tensor(), -1.0),
                       doctest::Contains("rms_norm: eps must be finite and >= 0, got -1"), Error);
}
