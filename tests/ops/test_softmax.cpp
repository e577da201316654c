#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Independent reference: softmax over the keys j of row r for which visible(r, j), written the
// textbook way (no row max needed for the small test values); masked keys give 0.
std::vector<double> reference_softmax(const std::vector<double>& x, std::int64_t rows, std::int64_t cols,
                                      const std::function<bool(std::int64_t, std::int64_t)>& visible) {
  std::vector<double> out(x.size(), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      if (visible(r, j)) sum += std::exp(x[static_cast<std::size_t>(r * cols + j)]);
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto k = static_cast<std::size_t>(r * cols + j);
      out[k] = visible(r, j) ? std::exp(x[k]) / sum : 0.0;
    }
  }
  return out;
}

std::vector<double> log_of(const std::vector<double>& v) {
  std::vector<double> out;
  for (double p : v) out.push_back(p == 0.0 ? -kInf : std::log(p));
  return out;
}

// Equal values, with -inf only where -inf is expected.
void check_log_values(const Tensor& got, const std::vector<double>& want, testing::Tolerance tol) {
  const auto g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element ", i, ": got ", g[i], " want ", want[i]);
    if (std::isinf(want[i])) {
      CHECK(g[i] == want[i]);
    } else {
      CHECK(std::abs(g[i] - want[i]) <= tol.abs + tol.rel * std::abs(want[i]));
    }
  }
}

// Finite-difference check of x's gradient for outputs that may hold -inf at masked keys (the
// stock gradcheck sums every output, and -inf * w is not a number). The seed w is nonzero at the
// -inf outputs too, so a gradient leaking from a masked key is caught. Those outputs are -inf at
// x +- eps alike and are left out of the numeric sum.
void check_gradient_with_masked_outputs(const std::function<Tensor(const Tensor&)>& fn, const Tensor& x0) {
  Tensor x = x0.to(DType::f64).clone();
  x.set_requires_grad(true);
  Tensor f = fn(x);
  Tensor w = random_tensor(f.shape(), 99, -1.0, 1.0, DType::f64);
  const auto wv = w.to_vector<double>();
  f.backward(w);
  REQUIRE(x.grad().defined());
  const auto analytic = x.grad().to_vector<double>();
  NoGradGuard no_grad;
  auto finite_sum = [&] {
    const auto v = fn(x).to_vector<double>();
    double total = 0;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (std::isfinite(v[i])) total += v[i] * wv[i];
    return total;
  };
  double* p = x.data<double>();
  const double eps = 1e-6;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double saved = p[i];
    p[i] = saved + eps;
    const double plus = finite_sum();
    p[i] = saved - eps;
    const double minus = finite_sum();
    p[i] = saved;
    const double numeric = (plus - minus) / (2 * eps);
    const double a = analytic[static_cast<std::size_t>(i)];
    INFO("element ", i, ": analytic ", a, " numeric ", numeric);
    CHECK(std::abs(a - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
  }
}

}  // namespace

TEST_CASE("softmax known values") {
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const std::vector<double> want = {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s};
  Tensor x = Tensor::from_vector<float>({3}, {1, 2, 3});
  CHECK_TENSOR_NEAR(softmax(x), want, tolerance_for(DType::f32));
  Tensor xd = Tensor::from_vector<double>({3}, {1, 2, 3});
  CHECK_TENSOR_NEAR(softmax(xd), want, tolerance_for(DType::f64));
  CHECK_TENSOR_NEAR(log_softmax(xd), log_of(want), tolerance_for(DType::f64));
  // Uniform row; several rows at once.
  Tensor two = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 5, 5, 5});
  CHECK_TENSOR_NEAR(softmax(two), {want[0], want[1], want[2], 1.0 / 3, 1.0 / 3, 1.0 / 3},
                    tolerance_for(DType::f64));
}

TEST_CASE("softmax is stable for large scores") {
  // Without subtracting the row max, exp(1000) overflows.
  Tensor big = Tensor::from_vector<float>({2, 3}, {1000, 1001, 1002, -1000, -1001, -1002});
  Tensor small = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 0, -1, -2});
  CHECK_TENSOR_NEAR(softmax(big), softmax(small), tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(log_softmax(big), log_softmax(small), tolerance_for(DType::f32));
  for (float v : log_softmax(big).to_vector<float>()) CHECK(std::isfinite(v));
}

TEST_CASE("softmax with a padding mask") {
  // x [B=2, Tq=2, Tk=3]; mask [B, 1, Tk]: batch 1 pads its last key.
  const std::vector<double> xv = {0.1, -0.4, 0.7, 1.2, 0.3, -0.5, 0.9, 0.2, -1.1, 0.4, 0.8, 2.0};
  Tensor x = Tensor::from_vector<double>({2, 2, 3}, xv);
  Tensor mask = Tensor::from_vector<double>({2, 1, 3}, {0, 0, 0, 0, 0, -kInf});
  const auto want = reference_softmax(xv, 4, 3, [](std::int64_t r, std::int64_t j) { return r < 2 || j < 2; });
  CHECK_TENSOR_NEAR(softmax(x, mask), want, tolerance_for(DType::f64));
  check_log_values(log_softmax(x, mask), log_of(want), tolerance_for(DType::f64));
  // An f32 mask is converted to x's dtype.
  CHECK_TENSOR_NEAR(softmax(x, mask.to(DType::f32)), want, tolerance_for(DType::f64));
  // A finite additive mask shifts the scores: the same as adding it to x.
  Tensor bias = Tensor::from_vector<double>({1, 1, 3}, {0.5, -1.0, 2.0});
  std::vector<double> shifted = xv;
  for (std::size_t i = 0; i < shifted.size(); ++i) shifted[i] += bias.to_vector<double>()[i % 3];
  CHECK_TENSOR_NEAR(softmax(x, bias), reference_softmax(shifted, 4, 3, [](auto, auto) { return true; }),
                    tolerance_for(DType::f64));
  // A mask over queries (extent 1 on the key axis) adds a constant per row: no effect.
  Tensor per_query = Tensor::from_vector<double>({1, 2, 1}, {3.0, -7.0});
  CHECK_TENSOR_NEAR(softmax(x, per_query), softmax(x), tolerance_for(DType::f64));
}

TEST_CASE("softmax with a causal mask") {
  // Tq = Tk = 3: query i sees keys 0..i.
  const std::vector<double> sq = {0.3, 1.0, -0.2, 0.5, -0.7, 0.1, 1.5, 0.2, -0.4};
  Tensor x = Tensor::from_vector<double>({3, 3}, sq);
  const auto want = reference_softmax(sq, 3, 3, [](std::int64_t i, std::int64_t j) { return j <= i; });
  CHECK_TENSOR_NEAR(softmax(x, Tensor(), true), want, tolerance_for(DType::f64));
  CHECK(want[0] == doctest::Approx(1.0));
  check_log_values(log_softmax(x, Tensor(), true), log_of(want), tolerance_for(DType::f64));

  // Incremental decoding, Tq = 2 < Tk = 4: the queries are the last two positions, so query 0
  // sees keys 0..2 and query 1 sees all four.
  const std::vector<double> inc = {0.3, 1.0, -0.2, 0.5, -0.7, 0.1, 1.5, 0.2};
  Tensor xi = Tensor::from_vector<double>({1, 2, 4}, inc);
  const auto want_inc = reference_softmax(inc, 2, 4, [](std::int64_t i, std::int64_t j) { return j <= i + 2; });
  CHECK(want_inc[3] == 0.0);
  CHECK_TENSOR_NEAR(softmax(xi, Tensor(), true), want_inc, tolerance_for(DType::f64));
  // One query at the end sees everything.
  Tensor last = Tensor::from_vector<double>({1, 4}, {0.3, 1.0, -0.2, 0.5});
  CHECK_TENSOR_NEAR(softmax(last, Tensor(), true), softmax(last), tolerance_for(DType::f64));

  // Causal and a padding mask together: [B=2, H=1, Tq=3, Tk=3], batch 1 pads key 2.
  Tensor x4 = Tensor::from_vector<double>({2, 1, 3, 3}, [&] {
    std::vector<double> v = sq;
    v.insert(v.end(), sq.begin(), sq.end());
    return v;
  }());
  Tensor pad = Tensor::from_vector<double>({2, 1, 1, 3}, {0, 0, 0, 0, 0, -kInf});
  std::vector<double> both = sq;
  both.insert(both.end(), sq.begin(), sq.end());
  const auto want_both = reference_softmax(both, 6, 3, [](std::int64_t r, std::int64_t j) {
    return j <= r % 3 && (r < 3 || j < 2);
  });
  CHECK_TENSOR_NEAR(softmax(x4, pad, true), want_both, tolerance_for(DType::f64));
}

TEST_CASE("f32 softmax rows (the vectorized path) equal f64 with masks, causal and long rows") {
  // x [B=2, H=2, Tq=3, Tk=37]: rows longer than the loops' eight lanes and not a multiple of them.
  const std::int64_t b = 2, h = 2, tq = 3, tk = 37;
  const Tensor x = random_tensor({b, h, tq, tk}, 31, -6.0, 6.0, DType::f64);
  // A padding mask per key (batch 1 pads its last 5 keys), a per-query one (extent 1 on the key
  // axis: a constant per row, which cancels) and an additive bias; batch 0's second query is
  // fully masked by the key mask in the causal case below.
  std::vector<double> pad(static_cast<std::size_t>(b * tk), 0.0);
  for (std::int64_t j = tk - 5; j < tk; ++j) pad[static_cast<std::size_t>(tk + j)] = -kInf;
  const Tensor key_mask = Tensor::from_vector<double>({b, 1, 1, tk}, pad);
  const Tensor per_query = random_tensor({1, 1, tq, 1}, 32, -3.0, 3.0, DType::f64);
  const Tensor bias = random_tensor({1, h, 1, tk}, 33, -2.0, 2.0, DType::f64);
  std::vector<double> hole(static_cast<std::size_t>(tq * tk), 0.0);
  for (std::int64_t j = 0; j < tk; ++j) hole[static_cast<std::size_t>(tk + j)] = -kInf;  // query 1: nothing
  const Tensor row_hole = Tensor::from_vector<double>({1, 1, tq, tk}, hole);
  const testing::Tolerance tol{1e-6, 1e-5};
  for (const Tensor* mask : {static_cast<const Tensor*>(nullptr), &key_mask, &per_query, &bias, &row_hole}) {
    for (bool causal : {false, true}) {
      const Tensor m = mask ? *mask : Tensor();
      INFO("mask ", mask ? mask->shape().str() : "none", ", causal ", causal);
      const Tensor mf = m.defined() ? m.to(DType::f32) : Tensor();
      CHECK_TENSOR_NEAR(softmax(x.to(DType::f32), mf, causal), softmax(x, m, causal).to_vector<double>(), tol);
      check_log_values(log_softmax(x.to(DType::f32), mf, causal), log_softmax(x, m, causal).to_vector<double>(),
                       tol);
    }
  }
}

TEST_CASE("softmax of a fully masked row gives zeros and zero gradient") {
  Tensor x = Tensor::from_vector<double>({2, 3}, {0.2, -0.3, 0.9, 1.0, 2.0, 3.0});
  Tensor mask = Tensor::from_vector<double>({2, 3}, {-kInf, -kInf, -kInf, 0, 0, 0});
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const std::vector<double> row = {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s};
  CHECK_TENSOR_NEAR(softmax(x, mask), {0, 0, 0, row[0], row[1], row[2]}, tolerance_for(DType::f64));
  check_log_values(log_softmax(x, mask), {-kInf, -kInf, -kInf, std::log(row[0]), std::log(row[1]), std::log(row[2])},
                   tolerance_for(DType::f64));
  // Causal with Tq > Tk: query 0 sees no key.
  Tensor tall = Tensor::from_vector<double>({3, 2}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6});
  const auto tall_y = softmax(tall, Tensor(), true).to_vector<double>();
  CHECK(tall_y[0] == 0.0);
  CHECK(tall_y[1] == 0.0);
  CHECK(tall_y[2] == doctest::Approx(1.0));
  CHECK(tall_y[3] == 0.0);

  for (bool log : {false, true}) {
    CAPTURE(log);
    Tensor xg = x.clone();
    xg.set_requires_grad(true);
    Tensor m = mask.clone();
    m.set_requires_grad(true);  // the mask gets no gradient even when it asks for one
    Tensor y = log ? log_softmax(xg, m) : softmax(xg, m);
    y.backward(Tensor::from_vector<double>({2, 3}, {1, -2, 3, 0.5, 0.25, -1}));
    const auto g = xg.grad().to_vector<double>();
    CHECK(g[0] == 0.0);
    CHECK(g[1] == 0.0);
    CHECK(g[2] == 0.0);
    for (double v : g) CHECK(std::isfinite(v));
    CHECK_FALSE(m.grad().defined());
  }
}

TEST_CASE("log_softmax equals log of softmax") {
  Tensor x = random_tensor({2, 3, 4, 5}, 7, -3.0, 3.0, DType::f64);
  Tensor mask = Tensor::from_vector<double>({2, 1, 1, 5}, {0, 0, 0, 0, 0, 0, 0, -kInf, 0, -kInf});
  for (bool causal : {false, true}) {
    for (const Tensor& m : {Tensor(), mask}) {
      CAPTURE(causal);
      check_log_values(log_softmax(x, m, causal), log_of(softmax(x, m, causal).to_vector<double>()),
                       tolerance_for(DType::f64));
    }
  }
  Tensor xf = random_tensor({3, 6}, 8, -3.0, 3.0);
  check_log_values(log_softmax(xf), log_of(softmax(xf).to_vector<double>()), tolerance_for(DType::f32));
}

TEST_CASE("softmax gradients (finite differences)") {
  Tensor x = random_tensor({3, 5}, 21, -2.0, 2.0);
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return softmax(in[0]); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return log_softmax(in[0]); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return softmax(in[0]); }, {random_tensor({4}, 22)});

  // Mask (padding and a finite bias) and causal: x [B=2, H=2, Tq=2, Tk=3].
  Tensor x4 = random_tensor({2, 2, 2, 3}, 23, -2.0, 2.0);
  Tensor pad = Tensor::from_vector<double>({2, 1, 1, 3}, {0, 0, 0, 0, -kInf, 0});
  Tensor bias = random_tensor({1, 2, 1, 3}, 24, -1.0, 1.0, DType::f64);
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return softmax(in[0], pad, causal); }, {x4});
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return softmax(in[0], bias, causal); }, {x4});
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return softmax(in[0], Tensor(), causal); }, {x4});
    // log_softmax with a finite mask has finite outputs: the stock check applies.
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return log_softmax(in[0], bias); }, {x4});
    // With -inf at masked keys, check on the finite outputs.
    check_gradient_with_masked_outputs([&](const Tensor& t) { return log_softmax(t, pad, causal); }, x4);
    check_gradient_with_masked_outputs([&](const Tensor& t) { return log_softmax(t, Tensor(), causal); }, x4);
  }
  // Incremental causal (Tq < Tk) and a fully masked causal row (Tq > Tk).
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return softmax(in[0], Tensor(), true); },
                  {random_tensor({2, 4}, 25)});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return softmax(in[0], Tensor(), true); },
                  {random_tensor({3, 2}, 26)});
  check_gradient_with_masked_outputs([](const Tensor& t) { return log_softmax(t, Tensor(), true); },
                                     random_tensor({3, 2}, 27));
}

TEST_CASE("softmax errors name the op and the shapes") {
  Tensor x = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH_AS(softmax(x, Tensor::zeros({2, 4})),
                       doctest::Contains("softmax: mask shape [2, 4] does not broadcast to x shape [2, 3]"), Error);
  CHECK_THROWS_WITH_AS(log_softmax(x, Tensor::zeros({3})),
                       doctest::Contains("log_softmax: mask shape [3] does not broadcast to x shape [2, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(softmax(Tensor::zeros({5}), Tensor(), true),
                       doctest::Contains("softmax: causal masking needs x of rank >= 2 ([..., Tq, Tk]), got shape [5]"),
                       Error);
  CHECK_THROWS_WITH_AS(log_softmax(Tensor::zeros({3}, DType::i32)),
                       doctest::Contains("log_softmax: expected a floating tensor"), Error);
  CHECK_THROWS_WITH_AS(softmax(x, Tensor::zeros({2, 3}, DType::i64)),
                       doctest::Contains("softmax: mask must be a floating (additive) tensor"), Error);
  CHECK_THROWS_WITH_AS(softmax(Tensor::zeros({2, 3}, DType::bf16)),
                       doctest::Contains("softmax: dtype bf16 is not supported on cpu"), Error);
  CHECK_THROWS_WITH_AS(softmax(Tensor()), doctest::Contains("softmax: x is undefined"), Error);
}
