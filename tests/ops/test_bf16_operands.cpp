// Bf16Operands: the bf16 GEMM operands of a forward made once per tensor, and the optimizer's copies.
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/bf16_operands.h"
#include "attnlab/precision.h"
#include "support/tensor_testing.h"

using namespace attnlab;

namespace {

// Bit-for-bit equality of two f32 tensors.
bool same_bits(const Tensor& a, const Tensor& b) { return a.to_vector<float>() == b.to_vector<float>(); }

struct Net {
  Tensor x, w1, w2, w3;
};

Net make_net() {
  Net n;
  n.x = testing::random_tensor({6, 8}, 1, -1.0, 1.0, DType::f32).set_requires_grad();
  n.w1 = testing::random_tensor({5, 8}, 2, -1.0, 1.0, DType::f32).set_requires_grad();
  n.w2 = testing::random_tensor({4, 8}, 3, -1.0, 1.0, DType::f32).set_requires_grad();
  n.w3 = testing::random_tensor({3, 8}, 4, -1.0, 1.0, DType::f32).set_requires_grad();
  return n;
}

// x feeds three GEMMs (two linears and a matmul); the result's parts are summed to one loss.
Tensor forward(const Net& n) {
  const Tensor a = sum(linear(n.x, n.w1)), b = sum(linear(n.x, n.w2)), c = sum(matmul(n.x, n.w3, false, true));
  return add(add(a, b), scale(c, 0.5));
}

// The net's forward and backward without a scope (plain, want) and inside one (scoped, got), in
// which `setup` may provide copies first; the scope's counts.
struct ScopedRun {
  Net plain = make_net(), scoped = make_net();
  Tensor want, got;
  Bf16Operands::Counts counts;
};
ScopedRun run_in_scope(const std::function<void(Bf16Operands&, const Net&)>& setup = {}) {
  ScopedRun r;
  r.want = forward(r.plain);
  r.want.backward();
  {
    Bf16Operands operands;
    if (setup) setup(operands, r.scoped);
    r.got = forward(r.scoped);
    r.counts = operands.counts();
  }
  r.got.backward();
  return r;
}

// The weights' gradients of both nets, bit for bit.
void check_same_weight_grads(const ScopedRun& r) {
  for (const auto& [p, q] : {std::pair{&r.plain.w1, &r.scoped.w1}, {&r.plain.w2, &r.scoped.w2}, {&r.plain.w3, &r.scoped.w3}})
    CHECK(same_bits(p->grad(), q->grad()));
}

}  // namespace

TEST_CASE("a Bf16Operands scope casts each GEMM operand once and changes no value") {
  const PrecisionGuard bf16(Precision::bf16);
  const ScopedRun r = run_in_scope();
  CHECK(same_bits(r.got, r.want));
  // x once for three uses, each weight once.
  CHECK(r.counts.cast == 4);
  CHECK(r.counts.reused == 2);
  CHECK(r.counts.provided == 0);
  // The weights' gradients are the same products; x's three contributions meet before the cast's
  // backward instead of after it (another order of the same f32 sums).
  check_same_weight_grads(r);
  CHECK_TENSOR_NEAR(r.scoped.x.grad(), r.plain.x.grad().to_vector<double>(), testing::Tolerance{1e-6, 1e-6});
}

TEST_CASE("a Bf16Operands scope takes a provided copy instead of casting the weight") {
  const PrecisionGuard bf16(Precision::bf16);
  const ScopedRun r = run_in_scope([](Bf16Operands& operands, const Net& scoped) {
    operands.provide(scoped.w1, scoped.w1.detach().to(DType::bf16));
    operands.provide(scoped.w3, scoped.w3.detach().to(DType::bf16));
  });
  CHECK(same_bits(r.got, r.want));
  CHECK(r.counts.provided == 2);
  CHECK(r.counts.cast == 2);  // x and w2
  // The copy's gradient reaches the weight through the cast's backward, as a cast's does.
  check_same_weight_grads(r);
  // What the GEMMs take is the copy's value: a different copy changes the result.
  Net other = make_net();
  Bf16Operands operands;
  operands.provide(other.w1, Tensor::zeros(other.w1.shape(), DType::bf16));
  CHECK(sum(linear(other.x, other.w1)).item() == 0.0);
}

TEST_CASE("a Bf16Operands scope serves each new tensor its own copy") {
  const PrecisionGuard bf16(Precision::bf16);
  const Tensor w = testing::random_tensor({4, 16}, 9, -1.0, 1.0, DType::f32);
  const double w_sum = sum(w).item();
  Bf16Operands operands;
  for (int i = 0; i < 20; ++i) {
    // A fresh input each time, freed at the end of the iteration: its copy is not the next one's.
    double got = 0;
    {
      const Tensor x = Tensor::full({3, 16}, 0.25 * (i + 1), DType::f32);
      got = sum(linear(x, w)).item();
    }
    CHECK(got == doctest::Approx(3.0 * 0.25 * (i + 1) * w_sum).epsilon(1e-2));
  }
  CHECK(operands.counts().cast == 21);  // w once, each x once
  CHECK(operands.counts().reused == 19);
}

TEST_CASE("Bf16Operands scopes nest, and nothing is kept outside them") {
  const PrecisionGuard bf16(Precision::bf16);
  const Tensor x = testing::random_tensor({2, 4}, 11, -1.0, 1.0, DType::f32);
  const Tensor w = testing::random_tensor({3, 4}, 12, -1.0, 1.0, DType::f32);
  Bf16Operands outer;
  linear(x, w);
  {
    Bf16Operands inner;
    linear(x, w);
    linear(x, w);
    CHECK(inner.counts().cast == 2);
    CHECK(inner.counts().reused == 2);
  }
  linear(x, w);
  CHECK(outer.counts().cast == 2);
  CHECK(outer.counts().reused == 2);
  // fp32 products take no bf16 operands.
  const PrecisionGuard fp32(Precision::fp32);
  linear(x, w);
  CHECK(outer.counts().cast == 2);
}

TEST_CASE("Bf16Operands::provide refuses a copy that does not match") {
  Bf16Operands operands;
  const Tensor w = Tensor::zeros({3, 4});
  CHECK_THROWS_WITH_AS(operands.provide(w, Tensor::zeros({4, 3}, DType::bf16)),
                       doctest::Contains("must be bf16 of its shape on its device, got bf16[4, 3] on cpu for "
                                         "f32[3, 4] on cpu"),
                       Error);
  CHECK_THROWS_WITH_AS(operands.provide(w, Tensor::zeros({3, 4})), doctest::Contains("got f32[3, 4]"), Error);
}
