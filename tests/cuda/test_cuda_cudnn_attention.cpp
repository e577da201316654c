// The cudnn attention plugin on cuda:0: the conformance kit against scaled_dot (f32 tensors
// computed in bf16, head sizes 8 and 16, bf16 tolerance), the whole module against scaled_dot
// built with the same seed (outputs, input and parameter gradients; padding, causal with equal
// lengths and with fewer queries than keys; refused with padding too), the bf16 core against scaled_dot's f32 core at the
// head sizes and lengths the benchmark uses, its refusals, and a padding mask that is not a suffix
// reported at the next call or backward. Skipped without a CUDA device or without the plugin (a
// build without cuDNN).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/plugin/conformance.h"
#include "attnlab/plugin/loader.h"
#include "support/tensor_testing.h"
#include "support/plugin_testing.h"

using namespace attnlab;
using testing::random_tensor;

namespace {

const Device kGpu = Device::cuda(0);
// bf16 keeps 8 significant bits: outputs and gradients of O(1) agree to a few 1e-2.
const testing::Tolerance kBf16{5e-2, 5e-2};

Registry& plugins() { return testing::in_tree_plugins().registry; }

#define SKIP_WITHOUT_CUDNN()                                                              \
  if (cuda_device_count() == 0) {                                                         \
    MESSAGE("no CUDA device: skipped");                                                   \
    return;                                                                               \
  }                                                                                       \
  if (!plugins().contains(PluginFamily::attention, "cudnn")) {                            \
    MESSAGE("the cudnn attention plugin is not built (no cuDNN 9 at configure time)");    \
    return;                                                                               \
  }

testing::BuiltAttention build(const std::string& name, const ModelDims& dims, std::uint64_t seed) {
  return testing::build_attention(plugins(), name, dims, kGpu, DType::f32, 0.0, seed);
}

Tensor leaf(const Shape& shape, std::uint64_t seed, DType dtype = DType::f32) {
  Tensor t = random_tensor(shape, seed, -1, 1, DType::f32).to(dtype).to(kGpu).detach();
  t.set_requires_grad();
  return t;
}

// [B, Tk] additive mask: row b keeps its first lengths[b] keys.
Tensor suffix_mask(const std::vector<std::int64_t>& lengths, std::int64_t keys) {
  std::vector<float> m;
  for (std::int64_t n : lengths)
    for (std::int64_t j = 0; j < keys; ++j) m.push_back(j < n ? 0.0f : -std::numeric_limits<float>::infinity());
  return Tensor::from_vector<float>({static_cast<std::int64_t>(lengths.size()), keys}, m).to(kGpu);
}

Tensor host(const Tensor& t) { return t.to(Device::cpu()).to(DType::f32); }

}  // namespace

TEST_CASE("cudnn attention passes the conformance kit on cuda") {
  SKIP_WITHOUT_CUDNN();
  ConformanceOptions options;
  options.device = kGpu;
  options.dtype = DType::f32;  // f32 tensors, bf16 arithmetic: a bf16 tolerance
  options.tolerance = 3e-2;
  options.reference = "scaled_dot";
  const ConformanceReport report = run_conformance(plugins(), PluginFamily::attention, "cudnn", options);
  INFO(report.summary());
  CHECK(report.passed());
  // The kit took the two smallest head sizes the plugin declares.
  REQUIRE_FALSE(report.checks.empty());
  CHECK(report.checks.front().name == "serves the kit's model on cuda:0 (f32, d_k 8, d_v 16)");
}

TEST_CASE("cudnn attention matches scaled_dot built with the same seed") {
  SKIP_WITHOUT_CUDNN();
  const ModelDims dims{.d_model = 64, .n_heads = 4, .d_k = 16, .d_v = 32, .d_ff = 128, .max_length = 128};
  struct Case {
    const char* name;
    std::int64_t tq, tk;
    bool causal;
    std::vector<std::int64_t> lengths;  // empty: no padding
  };
  const Case cases[] = {{"self attention", 37, 37, false, {}},
                        {"causal self attention with padding", 37, 37, true, {37, 20, 1}},
                        {"cross attention with padding", 11, 70, false, {70, 64, 33}},
                        {"causal queries over a longer key sequence", 13, 29, true, {}}};
  for (const auto& c : cases) {
    INFO("case: ", std::string(c.name));
    auto cudnn = build("cudnn", dims, 3), reference = build("scaled_dot", dims, 3);
    const std::int64_t b = 3;
    const Tensor mask = c.lengths.empty() ? Tensor() : suffix_mask(c.lengths, c.tk);
    // The same values as separate leaves for each module, so that the gradients stay apart.
    auto run = [&](Attention& module, Tensor& q, Tensor& kv) {
      q = leaf({b, c.tq, dims.d_model}, 10);
      kv = leaf({b, c.tk, dims.d_model}, 11);
      const Tensor& keys = c.tq == c.tk ? q : kv;
      return module.forward({.query = q, .key = keys, .value = keys, .key_padding_mask = mask, .causal = c.causal});
    };
    Tensor q_c, kv_c, q_r, kv_r;
    Tensor got = run(*cudnn.module, q_c, kv_c);
    Tensor want = run(*reference.module, q_r, kv_r);
    CHECK(got.dtype() == DType::f32);
    CHECK_TENSOR_NEAR(host(got), host(want), kBf16);

    const Tensor g = random_tensor(want.shape(), 12).to(kGpu);
    got.backward(g);
    want.backward(g);
    CHECK_TENSOR_NEAR(host(q_c.grad()), host(q_r.grad()), kBf16);
    if (c.tq != c.tk) CHECK_TENSOR_NEAR(host(kv_c.grad()), host(kv_r.grad()), kBf16);
    const auto pc = cudnn.module->named_parameters(), pr = reference.module->named_parameters();
    REQUIRE(pc.size() == pr.size());
    for (std::size_t i = 0; i < pc.size(); ++i) {
      CAPTURE(pc[i].first);
      CHECK_TENSOR_NEAR(host(pc[i].second.grad()), host(pr[i].second.grad()), kBf16);
    }
  }
}

TEST_CASE("cudnn attention core in bf16 matches the scaled_dot core in f32") {
  SKIP_WITHOUT_CUDNN();
  for (std::int64_t d : {64, 128}) {
    for (bool causal : {false, true}) {
      CAPTURE(d);
      CAPTURE(causal);
      const ModelDims dims{.d_model = 4 * d, .n_heads = 4, .d_k = d, .d_v = d, .d_ff = 8, .max_length = 8};
      auto cudnn = build("cudnn", dims, 5), reference = build("scaled_dot", dims, 5);
      const std::int64_t b = 2, h = 4, t = 200;  // t: not a multiple of the engines' tiles
      const Tensor q = leaf({b, h, t, d}, 20, DType::bf16), k = leaf({b, h, t, d}, 21, DType::bf16),
                   v = leaf({b, h, t, d}, 22, DType::bf16);
      const Tensor mask = suffix_mask({t, 150}, t);
      Tensor got = cudnn.module->attend({.query = q, .key = k, .value = v, .key_padding_mask = mask, .causal = causal});
      CHECK(got.dtype() == DType::bf16);
      Tensor q32 = q.to(DType::f32).detach(), k32 = k.to(DType::f32).detach(), v32 = v.to(DType::f32).detach();
      for (Tensor* x : {&q32, &k32, &v32}) x->set_requires_grad();
      Tensor want =
          reference.module->attend({.query = q32, .key = k32, .value = v32, .key_padding_mask = mask, .causal = causal});
      CHECK_TENSOR_NEAR(host(got), host(want), kBf16);
      const Tensor g = random_tensor(want.shape(), 23).to(kGpu);
      got.backward(g.to(DType::bf16));
      want.backward(g);
      CHECK_TENSOR_NEAR(host(q.grad()), host(q32.grad()), kBf16);
      CHECK_TENSOR_NEAR(host(k.grad()), host(k32.grad()), kBf16);
      CHECK_TENSOR_NEAR(host(v.grad()), host(v32.grad()), kBf16);
    }
  }
}

TEST_CASE("cudnn attention refuses what cuDNN cannot do with clear errors on cuda") {
  SKIP_WITHOUT_CUDNN();
  const ModelDims dims{.d_model = 16, .n_heads = 2, .d_k = 8, .d_v = 8, .d_ff = 8, .max_length = 8};
  auto a = build("cudnn", dims, 1);
  const Tensor q = leaf({1, 2, 2, 8}, 1), k = leaf({1, 2, 5, 8}, 2);
  CHECK_THROWS_WITH_AS(a.module->attend({.query = k, .key = q, .value = q, .causal = true}),
                       doctest::Contains("causal attention with 5 queries over 2 keys is not supported"), Error);
  // Causal queries over a longer padded key sequence: cuDNN gave wrong values for them (the plugin
  // declares them unsupported), so they are refused, with or without autograd.
  const Tensor mask = suffix_mask({3}, 5);
  CHECK_THROWS_WITH_AS(a.module->attend({.query = q, .key = k, .value = k, .key_padding_mask = mask, .causal = true}),
                       doctest::Contains("causal queries over a longer padded key sequence (2 queries over 5 keys"),
                       Error);
  {
    NoGradGuard no_grad;
    CHECK_THROWS_AS(a.module->attend({.query = q, .key = k, .value = k, .key_padding_mask = mask, .causal = true}),
                    Error);
  }
  const Tensor q64 = q.to(DType::f64);
  CHECK_THROWS_WITH_AS(a.module->attend({.query = q64, .key = q64, .value = q64}),
                       doctest::Contains("dtype f64 is not supported"), Error);
}

TEST_CASE("cudnn attention reports a padding mask that is not a suffix at its next call or backward") {
  SKIP_WITHOUT_CUDNN();
  const ModelDims dims{.d_model = 16, .n_heads = 2, .d_k = 8, .d_v = 8, .d_ff = 8, .max_length = 8};
  auto a = build("cudnn", dims, 1);
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor holes = Tensor::from_vector<float>({2, 5}, {0, 0, 0, 0, 0, 0, -inf, 0, 0, -inf}).to(kGpu);
  const Tensor good = suffix_mask({5, 3}, 5);
  const char* said = "key padding mask row 1 has padding (-inf) at key 1 before a real key";
  {  // inference: the call with the bad mask queues the check; the next call raises it
    NoGradGuard no_grad;
    const Tensor q = leaf({2, 2, 3, 8}, 1), k = leaf({2, 2, 5, 8}, 2);
    CHECK_NOTHROW(a.module->attend({.query = q, .key = k, .value = k, .key_padding_mask = holes}));
    synchronize(kGpu);
    CHECK_THROWS_WITH_AS(a.module->attend({.query = q, .key = k, .value = k, .key_padding_mask = good}),
                         doctest::Contains(said), Error);
    CHECK_NOTHROW(a.module->attend({.query = q, .key = k, .value = k, .key_padding_mask = good}));  // reported once
  }
  // training: the forward's check is raised by its own backward
  const Tensor q = leaf({2, 2, 3, 8}, 3), k = leaf({2, 2, 5, 8}, 4);
  Tensor o = a.module->attend({.query = q, .key = k, .value = k, .key_padding_mask = holes});
  synchronize(kGpu);  // as reading the loss does
  CHECK_THROWS_WITH_AS(o.backward(Tensor::full(o.shape(), 1.0, DType::f32, kGpu)), doctest::Contains(said), Error);
}
