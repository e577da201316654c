#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::Tolerance;

namespace {

// Hand reference: -sum_k q_k log softmax(x)_k for one row.
double row_loss(const std::vector<double>& x, int y, double eps) {
  double m = x[0];
  for (double v : x) m = std::max(m, v);
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  const double lse = m + std::log(s);
  double loss = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double q = (1 - eps) * (static_cast<int>(k) == y ? 1.0 : 0.0) + eps / static_cast<double>(x.size());
    loss -= q * (x[k] - lse);
  }
  return loss;
}

}  // namespace

TEST_CASE("cross_entropy 2x3 known values without smoothing") {
  Tensor logits = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 1, 1, 1});
  Tensor targets = Tensor::from_vector<std::int64_t>({2}, {2, 0});
  auto r = cross_entropy(logits, targets);
  CHECK(r.loss_sum.shape() == Shape{});
  CHECK(r.tokens.item() == 2);
  // Row 0: lse = log(e + e^2 + e^3) = 3.40760596444438, loss = lse - 3 = 0.40760596444438.
  // Row 1: uniform, loss = log 3 = 1.09861228866811.
  CHECK(r.loss_sum.item() == doctest::Approx(0.40760596444438 + 1.09861228866811).epsilon(1e-12));
  CHECK(r.loss_sum.item() == doctest::Approx(row_loss({1, 2, 3}, 2, 0) + row_loss({1, 1, 1}, 0, 0)).epsilon(1e-12));
}

TEST_CASE("cross_entropy 2x3 known values with label smoothing") {
  Tensor logits = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 1, 1, 1});
  Tensor targets = Tensor::from_vector<std::int32_t>({2}, {2, 0});
  auto r = cross_entropy(logits, targets, 0.1);
  // Row 0: q = (0.0333.., 0.0333.., 0.9333..): loss = lse - 0.9 * 3 - 0.1 * (1 + 2 + 3) / 3
  //      = 3.40760596444438 - 2.7 - 0.2 = 0.50760596444438. Row 1 (uniform logits): log 3.
  CHECK(r.tokens.item() == 2);
  CHECK(r.loss_sum.dtype() == DType::f32);
  CHECK(r.loss_sum.item() == doctest::Approx(0.50760596444438 + 1.09861228866811).epsilon(1e-6));
  CHECK(r.loss_sum.item() == doctest::Approx(row_loss({1, 2, 3}, 2, 0.1) + row_loss({1, 1, 1}, 0, 0.1)).epsilon(1e-6));
}

TEST_CASE("cross_entropy ignored rows contribute nothing") {
  Tensor logits = Tensor::from_vector<double>({3, 3}, {1, 2, 3, 5, -7, 100, 1, 1, 1});
  Tensor targets = Tensor::from_vector<std::int64_t>({3}, {2, -100, 0});
  auto r = cross_entropy(logits, targets, 0.0, -100);
  CHECK(r.tokens.item() == 2);
  CHECK(r.loss_sum.item() == doctest::Approx(0.40760596444438 + 1.09861228866811).epsilon(1e-12));
  // All ignored: zero loss, zero tokens.
  auto none = cross_entropy(logits, Tensor::from_vector<std::int64_t>({3}, {-1, -1, -1}));
  CHECK(none.tokens.item() == 0);
  CHECK(none.loss_sum.item() == 0.0);
}

TEST_CASE("cross_entropy is stable for large logits") {
  Tensor logits = Tensor::from_vector<float>({1, 3}, {1000, 1001, 1002});
  auto r = cross_entropy(logits, Tensor::from_vector<std::int64_t>({1}, {2}));
  CHECK(std::isfinite(r.loss_sum.item()));
  CHECK(r.loss_sum.item() == doctest::Approx(0.40760596444438).epsilon(1e-5));
}

TEST_CASE("cross_entropy backward is softmax minus the smoothed target") {
  Tensor logits = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 1, 1, 1});
  logits.set_requires_grad(true);
  Tensor targets = Tensor::from_vector<std::int64_t>({2}, {2, -1});
  auto r = cross_entropy(logits, targets, 0.3);
  r.loss_sum.backward(Tensor::full(Shape{}, 2.0, DType::f64));
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double e = 0.1;  // eps / V
  CHECK_TENSOR_NEAR(logits.grad(),
                    {2 * (std::exp(1.0) / s - e), 2 * (std::exp(2.0) / s - e), 2 * (std::exp(3.0) / s - 0.7 - e), 0, 0, 0},
                    Tolerance{1e-12, 1e-10});
}

TEST_CASE("cross_entropy gradient (finite differences)") {
  Tensor logits = random_tensor({4, 5}, 61, -2.0, 2.0);
  Tensor targets = Tensor::from_vector<std::int64_t>({4}, {3, -1, 0, 4});
  CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1], 0.1).loss_sum; },
                  {logits, targets});
  CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1]).loss_sum; },
                  {logits, targets});
  Tensor t32 = Tensor::from_vector<std::int32_t>({4}, {1, 1, 7, 2});
  CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1], 0.2, 7).loss_sum; },
                  {logits, t32});
}

TEST_CASE("cross_entropy errors name the offending values") {
  Tensor logits = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Tensor::from_vector<std::int64_t>({2}, {0, 3})),
                       doctest::Contains("cross_entropy: target 3 at position 1 is out of range for V = 3"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Tensor::from_vector<std::int64_t>({2}, {-2, 0})),
                       doctest::Contains("target -2 at position 0"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Tensor::from_vector<std::int64_t>({3}, {0, 0, 0})),
                       doctest::Contains("targets must be [N] = [2] for logits [2, 3], got [3]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(Tensor::zeros({6}), Tensor::from_vector<std::int64_t>({2}, {0, 0})),
                       doctest::Contains("logits must be [N, V], got [6]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Tensor::from_vector<std::int64_t>({2}, {0, 0}), 1.0),
                       doctest::Contains("label_smoothing must be in [0, 1), got 1"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Tensor::from_vector<std::int64_t>({2}, {0, 0}), -0.5),
                       doctest::Contains("got -0.5"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Tensor::zeros({2}, DType::f32)),
                       doctest::Contains("targets must be i32 or i64"), Error);
}

TEST_CASE("cross_entropy loss is identical with 1 and 2 threads") {
  const int saved = num_threads();
  Tensor logits = random_tensor({600, 100}, 71, -3.0, 3.0);  // 60000 elements
  Tensor targets = testing::random_ids({600}, 72, 100);
  set_num_threads(1);
  const double one = cross_entropy(logits, targets, 0.1).loss_sum.item();
  set_num_threads(2);
  const double two = cross_entropy(logits, targets, 0.1).loss_sum.item();
  set_num_threads(saved);
  CHECK(one == two);
}

TEST_CASE("cross_entropy keeps only the row log-sum-exp and allocates only the gradient") {
  // Host allocations are counted exactly (bytes requested), so the memory contract of the op
  // header can be checked: between the passes only lse [N], the loss [] and the token count []
  // (one i64) are new; after the backward only the loss, the count and the logits' gradient
  // [N, V] remain (lse is released).
  const std::int64_t n = 64, v = 1000;
  Tensor logits = random_tensor({n, v}, 3, -3.0, 3.0, DType::f64);
  logits.set_requires_grad();
  const Tensor targets = testing::random_ids({n}, 4, v);
  const Allocator& cpu = allocator_for(Device::cpu());
  const std::size_t before = cpu.bytes_in_use();
  {
    const CrossEntropyResult r = cross_entropy(logits, targets, 0.1);
    const std::size_t count = sizeof(std::int64_t);
    CHECK(cpu.bytes_in_use() - before == static_cast<std::size_t>(n + 1) * sizeof(double) + count);
    r.loss_sum.backward();
    CHECK(cpu.bytes_in_use() - before == static_cast<std::size_t>(n * v + 1) * sizeof(double) + count);
  }
  CHECK(cpu.bytes_in_use() - before == static_cast<std::size_t>(n * v) * sizeof(double));  // the gradient
}
