// Conformance of an attention plugin's score expressions (conformance_support.h), for a plugin
// that declares them on the kit's device: six variants, each
//   - with finite-difference gradients of the inputs and parameters (learned tensors included),
//   - decoding step by step with a growing cache equal to the full causal forward,
//   - giving the same bits when run again and on one thread,
//   - equal to the reference plugin (outputs and every gradient) on self-attention with padding,
//     causal self-attention and cross-attention, when a reference is given;
// and a mask that removes every key of some queries, whose outputs are then zeros, not NaN.
#include <limits>

#include "attnlab/autograd.h"
#include "attnlab/ops.h"
#include "attnlab/testing/expression_variants.h"
#include "attnlab/testing/gradcheck.h"
#include "attnlab/threads.h"
#include "plugin/conformance_support.h"

namespace attnlab::conformance {
namespace {

constexpr std::int64_t kB = 2, kTq = 4, kTk = 6, kD = 8;

using Variant = testing::ExpressionVariant;
using testing::head_tensor;

// The kit's model has 2 heads.
std::vector<Variant> variants() {
  return {
      {"causal as mask_mod", "", "kv_idx <= q_idx", {}},
      {"ALiBi", "score - slope[h] * abs(q_idx - kv_idx)", "", {head_tensor("slope", {2}, expr::TensorInit::alibi_slopes, false)}},
      {"T5 bias (learned)", "score + bias[h, clamp(kv_idx - q_idx, -3, 3) + 3]", "",
       {head_tensor("bias", {2, 7}, expr::TensorInit::normal, true)}},
      {"sliding window with a sink", "", "kv_idx == 0 || abs(q_idx - kv_idx) <= 1", {}},
      {"soft-capping", "2 * tanh(score / 2)", "", {}},
      {"temperature (learned)", "score * temp[h]", "", {head_tensor("temp", {2}, expr::TensorInit::values, true, {1.5, 0.5})}},
  };
}

std::shared_ptr<const expr::ScoreExpr> build(const Variant& v) { return testing::build_variant(v, 2, 64); }

// [B, Tk] additive mask: batch row 1 sees its first 4 keys.
Tensor padding(Device device, DType dtype) {
  std::vector<double> m(static_cast<std::size_t>(kB * kTk), 0.0);
  for (std::int64_t j = 4; j < kTk; ++j) m[static_cast<std::size_t>(kTk + j)] = -std::numeric_limits<double>::infinity();
  return Tensor::from_vector<double>({kB, kTk}, m).to(dtype).to(device);
}

Tensor leaf(const Shape& shape, std::uint64_t seed, Device device, DType dtype) {
  Tensor t = random_input(shape, seed, device).to(dtype);
  t.set_requires_grad();
  return t;
}

struct Call {
  bool self, mask, causal;
};

// Output and every gradient of one call on a fresh build.
struct Result {
  Tensor out, dq, dkv;
  std::vector<std::pair<std::string, Tensor>> params;
};
Result run(const Registry& registry, const std::string& plugin, const ConformanceOptions& options,
           const AttentionSetup& setup, const std::shared_ptr<const expr::ScoreExpr>& e, const Call& c) {
  const Device dev = options.device;
  auto a = build_attention(registry, plugin, options, setup, 21, 0.0, e);
  const Tensor q = leaf({kB, c.self ? kTk : kTq, kD}, 31, dev, setup.dtype);
  const Tensor kv = c.self ? q : leaf({kB, kTk, kD}, 32, dev, setup.dtype);
  AttentionInputs in{.query = q, .key = kv, .value = kv, .causal = c.causal};
  if (c.mask) in.key_padding_mask = padding(dev, setup.dtype);
  Tensor out = a.module->forward(in);
  out.backward(random_input(out.shape(), 33, dev).to(setup.dtype));
  return {out.detach(), q.grad(), c.self ? Tensor() : kv.grad(), a.module->named_parameters()};
}

std::string compare_results(const Result& got, const Result& want, double tol) {
  if (auto m = compare_close(got.out, want.out, tol, "output"); !m.empty()) return m;
  if (auto m = compare_close(got.dq, want.dq, tol, "gradient of the query"); !m.empty()) return m;
  if (got.dkv.defined())
    if (auto m = compare_close(got.dkv, want.dkv, tol, "gradient of the keys and values"); !m.empty()) return m;
  if (got.params.size() != want.params.size())
    return fmt::format("{} parameters against {}", got.params.size(), want.params.size());
  for (std::size_t i = 0; i < got.params.size(); ++i) {
    if (got.params[i].first != want.params[i].first)
      return fmt::format("parameter {} is {} in one and {} in the other", i, got.params[i].first, want.params[i].first);
    const Tensor g = got.params[i].second.grad(), w = want.params[i].second.grad();
    if (g.defined() != w.defined()) return fmt::format("parameter {} has a gradient in one only", got.params[i].first);
    if (!g.defined()) continue;
    if (auto m = compare_close(g, w, tol, "gradient of " + got.params[i].first); !m.empty()) return m;
  }
  return {};
}

}  // namespace

void check_attention_expressions(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                                 const AttentionSetup& setup, ConformanceReport& report) {
  const AttentionDeviceSupport* support =
      registry.find(PluginFamily::attention, name).capabilities.on(options.device.kind);
  if (!support || !support->score_expressions) return;
  const Device dev = options.device;
  const DType dt = setup.dtype;
  const Tensor x = random_input({kB, kTk, kD}, 3, dev).to(dt);
  for (const Variant& v : variants()) {
    const auto e = build(v);
    run_check(report, fmt::format("expressions, {}: gradients of inputs, parameters and tensors (finite "
                                  "differences)", v.name), [&]() -> std::string {
      if (!dev.is_cpu() || dt != DType::f64) return {};
      auto a = build_attention(registry, name, options, setup, 5, 0.0, e);
      const Tensor mask = padding(dev, dt);
      const auto r = testing::gradcheck(
          [&](const std::vector<Tensor>& in) {
            return a.module->forward({.query = in[0], .key = in[0], .value = in[0], .key_padding_mask = mask});
          },
          {x}, {}, a.module->parameters());
      return r.ok ? std::string() : r.message;
    });
    run_check(report, fmt::format("expressions, {}: incremental self-attention equals full decoding", v.name), [&] {
      auto a = build_attention(registry, name, options, setup, 5, 0.0, e);
      const Tensor full = a.module->forward({.query = x, .key = x, .value = x, .causal = true});
      return compare_close(full, step_by_step(*a.module, x), setup.tol, "step-by-step output");
    });
    run_check(report, fmt::format("expressions, {}: the same bits again and on one thread", v.name), [&] {
      const Call c{true, true, true};
      const Result a = run(registry, name, options, setup, e, c);
      const int threads = num_threads();
      set_num_threads(1);
      Result b;
      try {
        b = run(registry, name, options, setup, e, c);
      } catch (...) {
        set_num_threads(threads);
        throw;
      }
      set_num_threads(threads);
      return compare_results(b, a, 0.0);
    });
    if (options.reference.empty()) continue;
    const Call calls[] = {{true, true, false}, {true, false, true}, {false, true, false}};
    const char* names[] = {"self-attention with padding", "causal self-attention", "cross-attention with padding"};
    for (int k = 0; k < 3; ++k)
      run_check(report, fmt::format("expressions, {}: matches reference {}: {}", v.name, options.reference, names[k]),
                [&] {
                  return compare_results(run(registry, name, options, setup, e, calls[k]),
                                         run(registry, options.reference, options, setup, e, calls[k]), setup.tol);
                });
  }
  run_check(report, "expressions: queries whose every key mask_mod removes give zeros, not NaN", [&]() -> std::string {
    Variant v{"", "", "q_idx < 2", {}};
    auto a = build_attention(registry, name, options, setup, 5, 0.0, build(v));
    const Tensor q = leaf({kB, 2, kTk, setup.d_k}, 41, dev, dt), k = leaf({kB, 2, kTk, setup.d_k}, 42, dev, dt),
                 val = leaf({kB, 2, kTk, setup.d_v}, 43, dev, dt);
    const expr::ScoreExprCall call{build(v), {}, 0};
    Tensor core;
    try {
      core = a.module->attend({.query = q, .key = k, .value = val, .expressions = &call});
    } catch (const Error& err) {
      if (std::string(err.what()).find("does not expose its attention core") != std::string::npos) return {};
      throw;
    }
    core.backward(random_input(core.shape(), 44, dev).to(dt));
    const auto out = core.to_vector<double>();
    for (std::int64_t b = 0; b < kB; ++b)
      for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t i = 0; i < kTk; ++i)
          for (std::int64_t d = 0; d < setup.d_v; ++d) {
            const double y = out[static_cast<std::size_t>(((b * 2 + h) * kTk + i) * setup.d_v + d)];
            if (std::isnan(y) || (i >= 2 && y != 0.0))
              return fmt::format("output [{}, {}, {}, {}] is {} (queries 2.. see no key)", b, h, i, d, y);
          }
    for (const Tensor* t : {&q, &k, &val})
      for (double g : t->grad().to_vector<double>())
        if (std::isnan(g)) return "a gradient is NaN";
    return {};
  });
}

}  // namespace attnlab::conformance
