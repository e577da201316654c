// Score expressions in flash's kernels on cuda:0 (compiled by NVRTC into the FMA and, for bf16 at d
// 64, the tensor-core kernels) against the CPU path in f64: six variants (a causal mask, ALiBi, a
// learned relative bias, a window with a sink that removes whole tiles, soft-capping, a learned
// temperature), f32 and bf16, padding, causal masking and cross-attention positions, the output and
// every gradient (the learned tensors' included); and the conformance kit on cuda:0, whose
// expression checks run for a plugin that declares them there. Skipped without a CUDA device.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/plugin/conformance.h"
#include "attnlab/testing/expression_variants.h"
#include "flash_attention.h"
#include "support/cuda_testing.h"
#include "support/plugin_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;

namespace {

using testing::head_tensor;

using Variant = testing::ExpressionVariant;

// Four heads.
std::vector<Variant> variants() {
  return {{"causal", "", "kv_idx <= q_idx", {}},
          {"alibi", "score - slope[h] * abs(q_idx - kv_idx)", "",
           {head_tensor("slope", {4}, expr::TensorInit::alibi_slopes, false)}},
          {"t5", "score + bias[h, clamp(kv_idx - q_idx, -8, 8) + 8]", "",
           {head_tensor("bias", {4, 17}, expr::TensorInit::normal, true)}},
          {"window", "", "kv_idx == 0 || abs(q_idx - kv_idx) <= 20", {}},
          {"softcap", "5 * tanh(score / 5)", "", {}},
          {"temperature", "score * temp[h]", "",
           {head_tensor("temp", {4}, expr::TensorInit::values, true, {1.5, 0.7, 1.0, 1.2})}}};
}

// flash_attention on `device` in dtype with the variant's expressions: the output and the
// gradients of q, k, v and the learned tensors.
struct Run {
  Tensor out, dq, dk, dv;
  std::vector<Tensor> dt;
};
Run run(const Variant& var, Device device, DType dtype, bool causal, bool mask, std::int64_t tq, std::int64_t q_offset) {
  const std::int64_t b = 2, h = 4, tk = 150, d = 64;
  auto input = [&](const Shape& s, std::uint64_t seed) {
    // Rounded to bf16 once where the GPU runs bf16, so that both sides compute on the same values.
    return testing::random_tensor(s, seed, -1.5, 1.5, DType::f64).to(DType::bf16).to(DType::f64);
  };
  Tensor q = input({b, h, tq, d}, 1).to(dtype).to(device).set_requires_grad();
  Tensor k = input({b, h, tk, d}, 2).to(dtype).to(device).set_requires_grad();
  Tensor v = input({b, h, tk, d}, 3).to(dtype).to(device).set_requires_grad();
  const Tensor dout = input({b, h, tq, d}, 4).to(dtype).to(device);
  auto call = std::make_shared<expr::ScoreExprCall>();
  call->expr = testing::build_variant(var, h, 256);
  call->q_offset = q_offset;
  Generator init(9);
  for (const auto& spec : call->expr->tensors()) {
    Tensor t = expr::initial_tensor(spec, init, DType::f64, Device::cpu()).to(dtype).to(device);
    if (spec.learned) t.set_requires_grad();
    call->tensors.push_back(t);
  }
  flash::FlashOptions o{.causal = causal, .scale = 0.125};
  if (mask) {
    std::vector<double> m(static_cast<std::size_t>(b * tk), 0.0);
    for (std::int64_t j = 100; j < tk; ++j) m[static_cast<std::size_t>(j)] = -std::numeric_limits<double>::infinity();
    o.key_padding_mask = Tensor::from_vector<double>({b, tk}, m).to(dtype).to(device);
  }
  o.expressions = call;
  Tensor out = flash::flash_attention(q, k, v, o);
  out.backward(dout);
  Run r{out.detach().to(Device::cpu()).to(DType::f64), q.grad().to(Device::cpu()).to(DType::f64),
        k.grad().to(Device::cpu()).to(DType::f64), v.grad().to(Device::cpu()).to(DType::f64), {}};
  for (const Tensor& t : call->tensors)
    r.dt.push_back(t.requires_grad() ? t.grad().to(Device::cpu()).to(DType::f64) : Tensor());
  return r;
}

}  // namespace

TEST_CASE("flash with score expressions on cuda:0 equals the CPU path: f32 and bf16, forward and backward") {
  SKIP_WITHOUT_CUDA();
  struct Shape {
    bool causal, mask;
    std::int64_t tq, q_offset;
  };
  const Shape shapes[] = {{false, true, 150, 0}, {true, false, 150, 0}, {false, true, 70, 40}};
  for (const Variant& var : variants())
    for (const Shape& s : shapes)
      for (DType dtype : {DType::f32, DType::bf16}) {
        INFO(var.name, " ", dtype_name(dtype), " causal ", s.causal, " mask ", s.mask, " Tq ", s.tq);
        const Run want = run(var, Device::cpu(), DType::f64, s.causal, s.mask, s.tq, s.q_offset);
        const Run got = run(var, Device::cuda(0), dtype, s.causal, s.mask, s.tq, s.q_offset);
        const testing::Tolerance out_tol = dtype == DType::bf16 ? testing::Tolerance{2e-2, 2e-2} : testing::Tolerance{1e-4, 1e-4};
        const testing::Tolerance grad_tol = dtype == DType::bf16 ? testing::Tolerance{5e-2, 5e-2} : testing::Tolerance{1e-3, 1e-3};
        CHECK_TENSOR_NEAR(got.out, want.out, out_tol);
        CHECK_TENSOR_NEAR(got.dq, want.dq, grad_tol);
        CHECK_TENSOR_NEAR(got.dk, want.dk, grad_tol);
        CHECK_TENSOR_NEAR(got.dv, want.dv, grad_tol);
        for (std::size_t t = 0; t < want.dt.size(); ++t)
          if (want.dt[t].defined()) CHECK_TENSOR_NEAR(got.dt[t], want.dt[t], grad_tol);
      }
}

TEST_CASE("the conformance kit passes flash on cuda:0, its score expression checks included") {
  SKIP_WITHOUT_CUDA();
  ConformanceOptions options;
  options.device = Device::cuda(0);
  options.dtype = DType::f32;
  const ConformanceReport report = run_conformance(testing::in_tree_plugins().registry, PluginFamily::attention, "flash", options);
  INFO(report.summary());
  CHECK(report.passed());
  std::size_t expressions = 0;
  for (const auto& c : report.checks) expressions += c.name.find("expressions") == 0;
  CHECK(expressions > 0);
}
