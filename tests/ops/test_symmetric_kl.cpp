#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attnlab/attnlab.h"
#include "ops/symmetric_kl_kernels.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::Tolerance;

namespace {

// Hand reference: KL(p || r) + KL(r || p) of one pair of rows, from the definition.
double row_symmetric_kl(const std::vector<double>& a, const std::vector<double>& b) {
  const auto probs = [](const std::vector<double>& x) {
    double s = 0;
    for (double v : x) s += std::exp(v);
    std::vector<double> p;
    for (double v : x) p.push_back(std::exp(v) / s);
    return p;
  };
  const std::vector<double> p = probs(a), r = probs(b);
  double kl = 0;
  for (std::size_t k = 0; k < p.size(); ++k) kl += p[k] * std::log(p[k] / r[k]) + r[k] * std::log(r[k] / p[k]);
  return kl;
}

}  // namespace

TEST_CASE("symmetric_kl known values") {
  // Row 0: p = (1/2, 1/2), r = (3/4, 1/4): KL(p||r) = (ln(2/3) + ln 2) / 2 = 0.143841036225890,
  // KL(r||p) = (3 ln(3/2) + ln(1/2)) / 4 = 0.130812035941137. Row 1: equal rows, 0.
  const double ln3 = std::log(3.0);
  Tensor a = Tensor::from_vector<double>({2, 2}, {0, 0, 1, -2});
  Tensor b = Tensor::from_vector<double>({2, 2}, {ln3, 0, 1, -2});
  Tensor targets = Tensor::from_vector<std::int64_t>({2}, {0, 1});
  const Tensor kl = symmetric_kl(a, b, targets);
  CHECK(kl.shape() == Shape{});
  CHECK(kl.item() == doctest::Approx(0.143841036225890 + 0.130812035941137).epsilon(1e-12));
  // f32, shifted logits (softmax is shift-invariant) and a wider row against the definition.
  const std::vector<double> x = {0.5, -1.25, 2.0, 0.0, 3.5}, y = {1.0, 0.25, -0.5, 2.0, 3.0};
  std::vector<double> xs = x;
  for (double& v : xs) v += 40.0;
  Tensor a32 = Tensor::from_vector<float>({1, 5}, {xs.begin(), xs.end()});
  Tensor b32 = Tensor::from_vector<float>({1, 5}, {y.begin(), y.end()});
  const Tensor kl32 = symmetric_kl(a32, b32, Tensor::from_vector<std::int32_t>({1}, {4}));
  CHECK(kl32.dtype() == DType::f32);
  CHECK(kl32.item() == doctest::Approx(row_symmetric_kl(x, y)).epsilon(1e-5));
}

TEST_CASE("symmetric_kl ignored rows contribute nothing and receive no gradient") {
  Tensor a = Tensor::from_vector<double>({3, 3}, {1, 2, 3, 5, -7, 100, 0, 1, 0});
  Tensor b = Tensor::from_vector<double>({3, 3}, {3, 2, 1, -5, 7, 0, 1, 0, 0});
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  Tensor targets = Tensor::from_vector<std::int64_t>({3}, {2, -100, 0});
  const Tensor kl = symmetric_kl(a, b, targets, -100);
  CHECK(kl.item() == doctest::Approx(row_symmetric_kl({1, 2, 3}, {3, 2, 1}) + row_symmetric_kl({0, 1, 0}, {1, 0, 0}))
                         .epsilon(1e-12));
  kl.backward();
  const std::vector<double> ga = a.grad().to_vector<double>(), gb = b.grad().to_vector<double>();
  for (int k = 3; k < 6; ++k) {
    CHECK(ga[static_cast<std::size_t>(k)] == 0.0);
    CHECK(gb[static_cast<std::size_t>(k)] == 0.0);
  }
}

TEST_CASE("symmetric_kl backward follows the closed form") {
  // Row (0, 0) against (ln 3, 0): p = (1/2, 1/2), r = (3/4, 1/4), D = (ln(2/3), ln 2),
  // E_p[D] = 0.143841036225890, E_r[D] = -0.130812035941137; with g = 2:
  //   da = 2 (p (D - E_p[D]) + p - r),  db = 2 (r (E_r[D] - D) + r - p).
  const double ln3 = std::log(3.0);
  Tensor a = Tensor::from_vector<double>({1, 2}, {0, 0});
  Tensor b = Tensor::from_vector<double>({1, 2}, {ln3, 0});
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  symmetric_kl(a, b, Tensor::from_vector<std::int64_t>({1}, {0})).backward(Tensor::full(Shape{}, 2.0, DType::f64));
  const double d0 = std::log(2.0 / 3.0), d1 = std::log(2.0), ep = 0.143841036225890, er = -0.130812035941137;
  CHECK_TENSOR_NEAR(a.grad(), {2 * (0.5 * (d0 - ep) + 0.5 - 0.75), 2 * (0.5 * (d1 - ep) + 0.5 - 0.25)},
                    Tolerance{1e-12, 1e-10});
  CHECK_TENSOR_NEAR(b.grad(), {2 * (0.75 * (er - d0) + 0.75 - 0.5), 2 * (0.25 * (er - d1) + 0.25 - 0.5)},
                    Tolerance{1e-12, 1e-10});
}

TEST_CASE("symmetric_kl gradient (finite differences)") {
  Tensor a = random_tensor({4, 6}, 81, -2.0, 2.0);
  Tensor b = random_tensor({4, 6}, 82, -2.0, 2.0);
  Tensor targets = Tensor::from_vector<std::int64_t>({4}, {3, -1, 0, 5});
  CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return symmetric_kl(in[0], in[1], in[2]); }, {a, b, targets});
  Tensor t32 = Tensor::from_vector<std::int32_t>({4}, {1, 7, 7, 2});
  CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return symmetric_kl(in[0], in[1], in[2], 7); }, {a, b, t32});
}

TEST_CASE("symmetric_kl f32 matches f64 and is identical with 1 and 2 threads") {
  const testing::ThreadCountGuard guard;
  Tensor a = random_tensor({300, 200}, 91, -4.0, 4.0, DType::f64);
  Tensor b = random_tensor({300, 200}, 92, -4.0, 4.0, DType::f64);
  Tensor targets = testing::random_ids({300}, 93, 200);
  const double reference = symmetric_kl(a, b, targets).item();
  set_num_threads(1);
  const double one = symmetric_kl(a.to(DType::f32), b.to(DType::f32), targets).item();
  set_num_threads(2);
  const double two = symmetric_kl(a.to(DType::f32), b.to(DType::f32), targets).item();
  CHECK(one == two);
  CHECK(one == doctest::Approx(reference).epsilon(1e-5));
}

TEST_CASE("symmetric_kl errors name the offending shapes") {
  Tensor a = Tensor::zeros({2, 3});
  const Tensor t = Tensor::from_vector<std::int64_t>({2}, {0, 0});
  CHECK_THROWS_WITH_AS(symmetric_kl(a, Tensor::zeros({2, 4}), t), doctest::Contains("symmetric_kl"), Error);
  CHECK_THROWS_WITH_AS(symmetric_kl(Tensor::zeros({6}), Tensor::zeros({6}), t),
                       doctest::Contains("logits must be [N, V], got [6]"), Error);
  CHECK_THROWS_WITH_AS(symmetric_kl(a, a, Tensor::from_vector<std::int64_t>({3}, {0, 0, 0})),
                       doctest::Contains("targets must be [N] = [2] for logits [2, 3], got [3]"), Error);
  CHECK_THROWS_WITH_AS(symmetric_kl(a, a, Tensor::zeros({2}, DType::f32)),
                       doctest::Contains("targets must be i32 or i64"), Error);
  CHECK_THROWS_WITH_AS(symmetric_kl(a, Tensor::zeros({2, 3}, DType::f64), t), doctest::Contains("symmetric_kl"),
                       Error);
}

TEST_CASE("symmetric_kl composed of other ops (the path of other devices) matches the fused cpu kernel") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype ", dtype_name(dtype));
    Tensor a1 = random_tensor({7, 50}, 101, -3.0, 3.0, dtype), b1 = random_tensor({7, 50}, 102, -3.0, 3.0, dtype);
    Tensor a2 = a1.detach(), b2 = b1.detach();
    for (Tensor* x : {&a1, &b1, &a2, &b2}) x->set_requires_grad(true);
    const Tensor targets = Tensor::from_vector<std::int64_t>({7}, {3, 0, -1, 49, -1, 7, 8});
    const Tensor fused = symmetric_kl(a1, b1, targets);
    const Tensor composed = detail::symmetric_kl_composed(a2, b2, targets, -1);
    const double tol = dtype == DType::f32 ? 1e-5 : 1e-12;
    CHECK(composed.item() == doctest::Approx(fused.item()).epsilon(tol));
    fused.backward();
    composed.backward();
    CHECK_TENSOR_NEAR(a2.grad(), a1.grad(), Tolerance{tol, tol});
    CHECK_TENSOR_NEAR(b2.grad(), b1.grad(), Tolerance{tol, tol});
  }
}
