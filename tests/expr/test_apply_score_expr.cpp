// The dense reference op apply_score_expr: known values of the variants researchers write (soft
// capping, ALiBi, a window with a sink, a learned per-head temperature and a learned relative
// bias), the masks' -inf, the positions of incremental decoding and the lengths, and
// finite-difference gradients in f64 through score_mod to the scores and into learned tensors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attnlab/attnlab.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/ops/score_expr.h"
#include "attnlab/testing/gradcheck.h"
#include "expr_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using namespace expr_testing;
using testing::random_tensor;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Dims {
  std::int64_t b = 2, h = 4, tq = 5, tk = 7;
};

// The reference value of element (b, h, i, j) of a [B, H, Tq, Tk] tensor, by a formula.
template <typename F>
std::vector<double> expected(const Dims& d, F f) {
  std::vector<double> out;
  for (std::int64_t b = 0; b < d.b; ++b)
    for (std::int64_t h = 0; h < d.h; ++h)
      for (std::int64_t i = 0; i < d.tq; ++i)
        for (std::int64_t j = 0; j < d.tk; ++j) out.push_back(f(b, h, i, j));
  return out;
}

double at(const std::vector<double>& s, const Dims& d, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
  return s[static_cast<std::size_t>(((b * d.h + h) * d.tq + i) * d.tk + j)];
}

void check_equal(const Tensor& got, const std::vector<double>& want, double tol) {
  const auto g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t k = 0; k < g.size(); ++k) {
    INFO("element ", k, ": got ", g[k], " want ", want[k]);
    if (std::isinf(want[k])) CHECK(g[k] == want[k]);
    else CHECK(std::abs(g[k] - want[k]) <= tol * (1.0 + std::abs(want[k])));
  }
}

}  // namespace

TEST_CASE("soft-capping and a window with a sink: values and -inf where masked, f32 and f64") {
  const Dims d;
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor s = random_tensor({d.b, d.h, d.tq, d.tk}, 3, -40.0, 40.0, dtype);
    const auto sv = s.to_vector<double>();
    expr::ScoreExprCall call{build("20 * tanh(score / 20)", "kv_idx == 0 || abs(q_idx - kv_idx) <= 1"), {}, 2};
    const Tensor out = apply_score_expr(s, call);
    check_equal(out, expected(d, [&](auto b, auto h, auto i, auto j) {
                  const std::int64_t q = 2 + i;
                  const bool keep = j == 0 || std::abs(q - j) <= 1;
                  return keep ? 20.0 * std::tanh(at(sv, d, b, h, i, j) / 20.0) : -kInf;
                }),
                dtype == DType::f32 ? 1e-6 : 1e-14);
  }
}

TEST_CASE("ALiBi written as an expression equals the alibi slopes' bias") {
  const Dims d;
  TensorSpec slopes = tensor("slope", {4}, false, TensorInit::alibi_slopes);
  const auto e = build("score - slope[h] * abs(q_idx - kv_idx)", "", {slopes});
  Generator init(1);
  const Tensor s = random_tensor({d.b, d.h, d.tq, d.tk}, 5, -1, 1, DType::f64);
  const auto sv = s.to_vector<double>();
  const std::vector<double> m = expr::alibi_slopes(4);
  CHECK(m[0] == doctest::Approx(0.25));  // 2^(-8/4)
  const Tensor out =
      apply_score_expr(s, {e, {expr::initial_tensor(slopes, init, DType::f64, Device::cpu())}, d.tk - d.tq});
  check_equal(out, expected(d, [&](auto b, auto h, auto i, auto j) {
                return at(sv, d, b, h, i, j) - m[static_cast<std::size_t>(h)] * std::abs(d.tk - d.tq + i - j);
              }),
              1e-14);
}

TEST_CASE("the lengths and the batch row reach the expressions; defaults are Tq + q_offset and Tk") {
  const Dims d;
  const auto e = build("score + float(q_len * 100 + kv_len) + 1000.0 * b", "kv_idx < kv_len");
  const Tensor s = Tensor::zeros({d.b, d.h, d.tq, d.tk}, DType::f64);
  const Tensor out = apply_score_expr(
      s, {e, {}, 0, Tensor::from_vector<std::int32_t>({2}, {3, 4}), Tensor::from_vector<std::int32_t>({2}, {6, 2})});
  const std::int64_t ql[] = {3, 4}, kl[] = {6, 2};
  check_equal(out, expected(d, [&](auto b, auto, auto, auto j) {
                return j < kl[b] ? static_cast<double>(ql[b] * 100 + kl[b] + 1000 * b) : -kInf;
              }),
              0.0);
  const Tensor dflt = apply_score_expr(s, {e, {}, 2});
  check_equal(dflt, expected(d, [&](auto b, auto, auto, auto) { return static_cast<double>(7 * 100 + 7 + 1000 * b); }),
              0.0);
}

TEST_CASE("integer arithmetic: division rounds down and the remainder takes the divisor's sign") {
  const Dims d{1, 4, 3, 9};
  const auto e = build("score + float((kv_idx - q_idx) / 3) + 0.01 * float((kv_idx - q_idx) % 3)");
  const Tensor out = apply_score_expr(Tensor::zeros({1, 4, 3, 9}, DType::f64), {e, {}, 0});
  check_equal(out, expected(d, [&](auto, auto, auto i, auto j) {
                const std::int64_t r = j - i;
                const double q = std::floor(static_cast<double>(r) / 3.0);
                return q + 0.01 * static_cast<double>(r - q * 3);
              }),
              1e-15);
}

TEST_CASE("gradients through score_mod to the scores and into learned tensors, by finite differences in f64") {
  const Dims d{2, 4, 3, 6};
  struct Variant {
    const char* name;
    const char* score_mod;
    const char* mask_mod;
    std::vector<TensorSpec> tensors;
  };
  const Variant variants[] = {
      {"soft-capping", "5 * tanh(score / 5)", "", {}},
      {"T5 bias (learned)", "score + bias[h, clamp(kv_idx - q_idx, -2, 2) + 2]", "", {tensor("bias", {4, 5}, true)}},
      {"temperature (learned)", "score * temp[h]", "kv_idx <= q_idx + 3", {tensor("temp", {4}, true)}},
      {"learned ALiBi slopes", "score - slope[h] * abs(q_idx - kv_idx)", "", {tensor("slope", {4}, true)}},
      {"every op", "max(min(sqrt(exp(score) + 1), 4), log(2 + sigmoid(score))) + pow(abs(score) + 1, 1.5) "
                   "- clamp(score, -0.5, 0.5) + (score > 0 ? score * score : -score) + score % 0.7 + w[h] * w[h] / (1 + w[h] * w[h])",
       "", {tensor("w", {4}, true)}},
  };
  for (const auto& v : variants) {
    INFO(v.name);
    const auto e = build(v.score_mod, v.mask_mod, v.tensors);
    std::vector<Tensor> params;
    for (std::size_t k = 0; k < e->tensors().size(); ++k)
      params.push_back(random_tensor(Shape(e->tensors()[k].shape), 20 + k, -1, 1, DType::f64).set_requires_grad());
    const Tensor s = random_tensor({d.b, d.h, d.tq, d.tk}, 9, -2, 2, DType::f64);
    // Through a softmax, as attention uses the scores: masked outputs are -inf, which the
    // gradcheck's weighted sum cannot take, and weigh 0 after it.
    auto fn = [&](const std::vector<Tensor>& in) { return softmax(apply_score_expr(in[0], {e, params, d.tk - d.tq})); };
    const auto r = testing::gradcheck(fn, {s}, {}, params);
    CHECK_MESSAGE(r.ok, r.message);
  }
}
