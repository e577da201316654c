// The cudnn attention plugin where no GPU is needed: it registers in builds with cuDNN, declares
// what it serves, builds on the CPU (so that `attnlab check` can count its parameters) with the
// parameters of scaled_dot, and refuses the CPU, unsupported head sizes and attention dropout with
// clear errors. Its computation is checked in tests/cuda.
#include <doctest/doctest.h>

#include <algorithm>

#include "attnlab/attnlab.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/plugin/conformance.h"
#include "attnlab/plugin/loader.h"
#include "support/plugin_testing.h"

using namespace attnlab;

namespace {

constexpr bool kCudnnBuilt = ATTNLAB_TEST_CUDNN_PLUGIN;

Registry& plugins() { return testing::in_tree_plugins().registry; }

testing::BuiltAttention build(const std::string& name, std::int64_t d_k, std::int64_t d_v, double attention_dropout = 0.0) {
  return testing::build_attention(plugins(), name,
                                  {.d_model = 16, .n_heads = 2, .d_k = d_k, .d_v = d_v, .d_ff = 32, .max_length = 16},
                                  Device::cpu(), DType::f32, attention_dropout, 7);
}

#define SKIP_WITHOUT_CUDNN_PLUGIN()                                                  \
  if (!kCudnnBuilt) {                                                                \
    CHECK_FALSE(plugins().contains(PluginFamily::attention, "cudnn"));                \
    MESSAGE("built without cuDNN: the cudnn attention plugin does not exist here");  \
    return;                                                                          \
  }

}  // namespace

TEST_CASE("cudnn attention registers in builds with cudnn") {
  SKIP_WITHOUT_CUDNN_PLUGIN();
  REQUIRE(plugins().contains(PluginFamily::attention, "cudnn"));
  const PluginInfo& info = plugins().find(PluginFamily::attention, "cudnn");
  CHECK(info.source.find("attnlab_attention_cudnn") != std::string::npos);
  CHECK(info.options.size() == 1);
  CHECK(info.options[0].name == "bias");
}

TEST_CASE("cudnn attention declares what it serves") {
  SKIP_WITHOUT_CUDNN_PLUGIN();
  const AttentionCapabilities& caps = plugins().find(PluginFamily::attention, "cudnn").capabilities;
  CHECK(caps.on(DeviceKind::cpu) == nullptr);
  const AttentionDeviceSupport* cuda = caps.on(DeviceKind::cuda);
  REQUIRE(cuda != nullptr);
  CHECK(cuda->dtypes == std::vector<DType>{DType::bf16, DType::f32});
  REQUIRE(cuda->head_dims.size() == 16);
  CHECK(cuda->head_dims.front() == 8);
  CHECK(cuda->head_dims.back() == 128);
  CHECK(cuda->padding_mask);
  CHECK(cuda->causal);
  CHECK_FALSE(cuda->causal_longer_padded_keys);  // cuDNN's values are wrong there: refused, not served
  CHECK(cuda->incremental);
  CHECK_FALSE(cuda->attention_dropout);
  CHECK(cuda->compute_dtype == DType::bf16);  // the conformance kit then takes bf16's tolerance for f32 tensors
  // What `attnlab check` answers for a row it cannot serve, and for one it can.
  const PluginInfo& info = plugins().find(PluginFamily::attention, "cudnn");
  const auto cpu_row = check_attention_support(info, Device::cpu(), DType::f32, 64, 64);
  REQUIRE(cpu_row.has_value());
  CHECK(cpu_row->find("cudnn") != std::string::npos);
  const auto head_row = check_attention_support(info, Device::cuda(0), DType::f32, 12, 64);
  REQUIRE(head_row.has_value());
  CHECK(head_row->find("12") != std::string::npos);
  const auto dropout_row = check_attention_support(info, Device::cuda(0), DType::f32, 64, 64,
                                                   {.attention_dropout = true});
  CHECK(dropout_row.has_value());
  CHECK_FALSE(check_attention_support(info, Device::cuda(0), DType::bf16, 64, 32).has_value());
  // The Transformer does not ask for causal queries over a longer padded key sequence; a model
  // that did is refused (or sent to its fallback), and `attnlab plugins` says what is missing.
  const auto offset_row = check_attention_support(info, Device::cuda(0), DType::bf16, 64, 64,
                                                  {.causal_longer_padded_keys = true});
  REQUIRE(offset_row.has_value());
  CHECK(offset_row->find("does not support causal queries over a longer padded key sequence on cuda") !=
        std::string::npos);
  CHECK(describe_attention_support(*cuda).find("causal (not over a longer padded key sequence)") != std::string::npos);
  CHECK_FALSE(check_attention_support(info, Device::cuda(0), DType::f32, 128, 8).has_value());
}

TEST_CASE("cudnn attention has the parameters of scaled_dot for one seed") {
  SKIP_WITHOUT_CUDNN_PLUGIN();
  const auto a = build("cudnn", 8, 16).module->named_parameters();
  const auto b = build("scaled_dot", 8, 16).module->named_parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(a[i].first);
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.to_vector<double>() == b[i].second.to_vector<double>());
  }
}

TEST_CASE("cudnn attention refuses the cpu clearly") {
  SKIP_WITHOUT_CUDNN_PLUGIN();
  auto a = build("cudnn", 8, 16);
  const Tensor x = Tensor::zeros({1, 3, 16});
  CHECK_THROWS_WITH_AS(a.module->forward({.query = x, .key = x, .value = x}),
                       doctest::Contains("cudnn attention runs on CUDA devices only; use scaled_dot or flash"), Error);
  const Tensor q = Tensor::zeros({1, 2, 3, 8});
  CHECK_THROWS_WITH_AS(a.module->attend({.query = q, .key = q, .value = q}),
                       doctest::Contains("cudnn attention runs on CUDA devices only"), Error);
  // The conformance kit on the CPU stops at its first check, which names the device.
  const ConformanceReport report = run_conformance(plugins(), PluginFamily::attention, "cudnn");
  CHECK_FALSE(report.passed());
  REQUIRE_FALSE(report.checks.empty());
  CHECK(report.checks.front().name.find("serves the kit's model on cpu") != std::string::npos);
  CHECK_FALSE(report.checks.front().passed);
}

TEST_CASE("cudnn attention refuses unsupported head sizes and attention dropout when it is built") {
  SKIP_WITHOUT_CUDNN_PLUGIN();
  CHECK_THROWS_WITH_AS(build("cudnn", 12, 16),
                       doctest::Contains("head size 12 (d_k 12, d_v 16) is not supported"), Error);
  CHECK_THROWS_WITH_AS(build("cudnn", 8, 136), doctest::Contains("multiples of 8 up to 128"), Error);
  CHECK_THROWS_WITH_AS(build("cudnn", 8, 16, 0.1), doctest::Contains("attention dropout 0.1 is not supported"), Error);
}
