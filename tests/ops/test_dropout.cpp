#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;

using testing::ThreadCountGuard;

TEST_CASE("dropout keeps about 1 - p and scales kept values") {
  const double p = 0.3;
  const std::int64_t n = 100000;
  Tensor x = random_tensor({100, 1000}, 5, 0.5, 1.5);  // no zeros, so a 0 output means dropped
  Tensor y = dropout(x, p, 42, 7);
  CHECK(y.shape() == x.shape());
  const auto xv = x.to_vector<float>();
  const auto yv = y.to_vector<float>();
  std::int64_t kept = 0;
  bool values_ok = true, mask_ok = true;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const bool keep = philox_uniform(42, 7, static_cast<std::uint64_t>(i)) >= p;
    if (yv[k] != 0.0f) {
      ++kept;
      values_ok = values_ok && std::abs(yv[k] - xv[k] / 0.7f) <= 1e-6f * std::abs(xv[k] / 0.7f);
    }
    mask_ok = mask_ok && keep == (yv[k] != 0.0f);
  }
  CHECK(values_ok);
  CHECK(mask_ok);  // the mask equals the one drawn from philox_uniform directly
  const double fraction = static_cast<double>(kept) / static_cast<double>(n);
  // Binomial standard deviation sqrt(p (1 - p) / n) ~ 0.0014; allow 5 sigma.
  CHECK(std::abs(fraction - (1 - p)) < 0.0075);
}

TEST_CASE("dropout f64 matches f32 mask and depends on seed and offset") {
  Tensor x = Tensor::full({1000}, 1.0, DType::f64);
  const auto a = dropout(x, 0.5, 3, 0).to_vector<double>();
  const auto b = dropout(x.to(DType::f32), 0.5, 3, 0).to_vector<double>();
  CHECK(a == b);
  for (double v : a) CHECK((v == 0.0 || v == 2.0));
  CHECK(dropout(x, 0.5, 4, 0).to_vector<double>() != a);
  CHECK(dropout(x, 0.5, 3, 1).to_vector<double>() != a);
  // An offset of one block shifts the stream by four elements.
  const auto shifted = dropout(x, 0.5, 3, 1).to_vector<double>();
  CHECK(std::equal(shifted.begin(), shifted.end() - 4, a.begin() + 4));
}

TEST_CASE("dropout with p equal to 0 returns x itself") {
  Tensor x = random_tensor({3, 4}, 1);
  Tensor y = dropout(x, 0.0, 1, 0);
  CHECK(y.same_storage(x));
  CHECK(y.impl() == x.impl());
}

TEST_CASE("dropout rejects p outside the unit interval") {
  Tensor x = Tensor::zeros({4});
  CHECK_THROWS_WITH_AS(dropout(x, 1.0, 1, 0), doctest::Contains("dropout: p must be in [0, 1), got p = 1"), Error);
  CHECK_THROWS_WITH_AS(dropout(x, -0.1, 1, 0), doctest::Contains("got p = -0.1"), Error);
  CHECK_THROWS_WITH_AS(dropout(x, NAN, 1, 0), doctest::Contains("got p = nan"), Error);
  CHECK_THROWS_WITH_AS(dropout(Tensor::zeros({4}, DType::i32), 0.5, 1, 0),
                       doctest::Contains("expected a floating tensor"), Error);
}

TEST_CASE("dropout with a generator draws disjoint streams") {
  Generator gen(9);
  Tensor x = Tensor::full({10}, 1.0);
  Tensor a = dropout(x, 0.5, gen);
  CHECK(gen.offset() == 3);  // ceil(10 / 4) blocks
  Tensor b = dropout(x, 0.5, gen);
  CHECK(gen.offset() == 6);
  CHECK(a.to_vector<float>() == dropout(x, 0.5, 9, 0).to_vector<float>());
  CHECK(b.to_vector<float>() == dropout(x, 0.5, 9, 3).to_vector<float>());
}

TEST_CASE("dropout gradient (finite differences)") {
  Tensor x = random_tensor({3, 7}, 21);
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return dropout(in[0], 0.4, 1234, 5); }, {x});
}

TEST_CASE("dropout backward regenerates the forward mask") {
  Tensor x = random_tensor({50, 40}, 22, 0.5, 1.5, DType::f64);
  x.set_requires_grad(true);
  Tensor y = dropout(x, 0.25, 77, 11);
  y.backward(Tensor::full(y.shape(), 1.0, DType::f64));
  const auto yv = y.to_vector<double>();
  const auto gv = x.grad().to_vector<double>();
  bool ok = true;
  for (std::size_t i = 0; i < yv.size(); ++i) ok = ok && ((yv[i] == 0.0) == (gv[i] == 0.0)) && (gv[i] == 0.0 || std::abs(gv[i] - 1 / 0.75) < 1e-12);
  CHECK(ok);
}

TEST_CASE("dropout masks are identical with 1 and 2 threads") {
  ThreadCountGuard guard;
  Tensor x = random_tensor({257, 301}, 31, 0.5, 1.5);  // 77357 elements: above the parallel grain
  REQUIRE(x.numel() > 32768);
  set_num_threads(1);
  const auto one = dropout(x, 0.37, 2024, 13).to_vector<float>();
  set_num_threads(2);
  REQUIRE(num_threads() == 2);
  const auto two = dropout(x, 0.37, 2024, 13).to_vector<float>();
  CHECK(one == two);
  // And the backward, which regenerates the mask on the parallel path.
  Tensor xg = x.clone();
  xg.set_requires_grad(true);
  dropout(xg, 0.37, 2024, 13).backward(Tensor::full(x.shape(), 1.0));
  set_num_threads(1);
  Tensor xg1 = x.clone();
  xg1.set_requires_grad(true);
  dropout(xg1, 0.37, 2024, 13).backward(Tensor::full(x.shape(), 1.0));
  CHECK(xg.grad().to_vector<float>() == xg1.grad().to_vector<float>());
}
