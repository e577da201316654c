// Every in-tree plugin passes the conformance kit of its family; a broken plugin does not.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "attnlab/ops.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/plugin/conformance.h"
#include "attnlab/plugin/loader.h"
#include "plugin/conformance_support.h"
#include "support/plugin_testing.h"

using namespace attnlab;

namespace {

Registry& in_tree_registry() {
  REQUIRE(testing::in_tree_plugins().failures.empty());
  return testing::in_tree_plugins().registry;
}

// An attention plugin that declares no CPU support (cudnn) is checked by the cuda suite
// (tests/cuda/test_cuda_cudnn_attention.cpp); on the CPU the kit's first check must refuse it.
bool cuda_only(const PluginInfo& p) {
  return p.family == PluginFamily::attention && p.capabilities.on(DeviceKind::cpu) == nullptr;
}

void check_family(PluginFamily family, std::size_t at_least) {
  Registry& registry = in_tree_registry();
  const auto plugins = registry.list(family);
  CHECK(plugins.size() >= at_least);
  for (const auto& p : plugins) {
    if (cuda_only(p)) {
      const ConformanceReport report = run_conformance(registry, family, p.name);
      INFO(report.summary());
      REQUIRE_FALSE(report.checks.empty());
      CHECK_FALSE(report.checks.front().passed);
      CHECK(report.checks.front().message.find("on cpu") != std::string::npos);
      continue;
    }
    const ConformanceReport report = run_conformance(registry, family, p.name);
    INFO(report.summary());
    CHECK_MESSAGE(report.passed(), family_name(family), " plugin ", p.name, " failed the conformance kit");
  }
}

}  // namespace

TEST_CASE("every in-tree attention plugin passes the conformance kit") { check_family(PluginFamily::attention, 2); }
TEST_CASE("every in-tree positional plugin passes the conformance kit") { check_family(PluginFamily::positional, 3); }
TEST_CASE("every in-tree ffn plugin passes the conformance kit") { check_family(PluginFamily::ffn, 3); }
TEST_CASE("every in-tree dropout plugin passes the conformance kit") { check_family(PluginFamily::dropout, 1); }
TEST_CASE("every in-tree norm plugin passes the conformance kit") { check_family(PluginFamily::norm, 2); }

namespace {

// Norms that are wrong in one way each: no normalization at all, and fused parameters that claim
// a centred norm for an uncentred one.
class IdentityNorm final : public Norm {
 public:
  Tensor forward(const Tensor& x) override { return x; }
};
class MislabelledNorm final : public Norm {
 public:
  explicit MislabelledNorm(const BuildContext& ctx) {
    gamma_ = register_parameter("weight", Tensor::full({ctx.dims.d_model}, 1.0, ctx.dtype, ctx.device));
  }
  Tensor forward(const Tensor& x) override { return rms_norm(x, gamma_, Tensor(), 1e-6); }
  std::optional<FusableNorm> fusable() const override { return FusableNorm{gamma_, Tensor(), 1e-6, true}; }

 private:
  Tensor gamma_;
};

}  // namespace

TEST_CASE("the norm kit fails a norm that does not normalize and one whose fused parameters mislead") {
  Registry reg;
  reg.add_norm({.name = "identity"}, [](const BuildContext&) { return std::make_shared<IdentityNorm>(); });
  reg.add_norm({.name = "mislabelled"}, [](const BuildContext& ctx) { return std::make_shared<MislabelledNorm>(ctx); });
  const auto failed = [&](const std::string& name) {
    std::vector<std::string> names;
    for (const auto& c : run_conformance(reg, PluginFamily::norm, name).checks)
      if (!c.passed) names.push_back(c.name);
    return names;
  };
  CHECK(failed("identity") == std::vector<std::string>{"invariant to the input's scale"});
  CHECK(failed("mislabelled") == std::vector<std::string>{"fused parameters compute what forward does"});
}

TEST_CASE("flash passes the whole conformance kit against scaled_dot as reference") {
  ConformanceOptions options;
  options.reference = "scaled_dot";
  const ConformanceReport report = run_conformance(in_tree_registry(), PluginFamily::attention, "flash", options);
  INFO(report.summary());
  CHECK(report.passed());
  std::size_t compared = 0;
  for (const auto& c : report.checks) compared += c.name.find("reference scaled_dot") != std::string::npos;
  // Parameters, outputs and gradients in six settings, with the kit's positions, and with each of
  // rope, alibi and relative; and each of the six score expression variants in three settings.
  CHECK(compared == 11 + 6 * 3);
  CHECK(report.checks.front().name == "serves the kit's model on cpu (f64, d_k 3, d_v 5)");
}

TEST_CASE("the reference comparison fails a plugin that computes another function") {
  ConformanceOptions options;
  options.reference = "scaled_dot";
  const ConformanceReport report = run_conformance(in_tree_registry(), PluginFamily::attention, "additive", options);
  CHECK_FALSE(report.passed());
  for (const auto& c : report.checks)
    if (c.name.find("reference scaled_dot") != std::string::npos) CHECK_MESSAGE(!c.passed, c.name);
}

TEST_CASE("the conformance kit fails an attention that ignores masks and the cache") {
  Registry& registry = in_tree_registry();
  PluginLoader loader(registry);
  loader.load(std::string(ATTNLAB_TEST_FIXTURE_DIR) + "/attnlab_fixture_leaky.so");
  const ConformanceReport report = run_conformance(registry, PluginFamily::attention, "fixture_leaky");
  CHECK_FALSE(report.passed());
  std::vector<std::string> failed;
  for (const auto& c : report.checks)
    if (!c.passed) failed.push_back(c.name);
  auto has = [&](const std::string& name) { return std::find(failed.begin(), failed.end(), name) != failed.end(); };
  CHECK(has("padding keys receive zero weight"));
  CHECK(has("causal masking hides later positions"));
  CHECK(has("incremental self-attention equals full decoding"));
  CHECK_FALSE(has("output shapes"));
}

TEST_CASE("the conformance kit fails an attention that declares score expressions and ignores them") {
  Registry& registry = in_tree_registry();
  PluginLoader loader(registry);
  loader.load(std::string(ATTNLAB_TEST_FIXTURE_DIR) + "/attnlab_fixture_deaf.so");
  ConformanceOptions options;
  options.reference = "scaled_dot";
  const ConformanceReport report = run_conformance(registry, PluginFamily::attention, "fixture_deaf", options);
  std::vector<std::string> failed;
  for (const auto& c : report.checks)
    if (!c.passed) failed.push_back(c.name);
  INFO(report.summary());
  // Every variant's comparison with the reference fails; mask_mod's removed rows are not zeros;
  // nothing outside the expressions fails.
  for (const char* variant : {"causal as mask_mod", "ALiBi", "T5 bias (learned)", "sliding window with a sink",
                              "soft-capping", "temperature (learned)"})
    CHECK_MESSAGE(std::any_of(failed.begin(), failed.end(),
                              [&](const std::string& n) {
                                return n.find(std::string("expressions, ") + variant + ": matches reference") == 0;
                              }),
                  variant);
  for (const auto& n : failed) CHECK_MESSAGE(n.find("expressions") == 0, n);
}

TEST_CASE("learned positions refuse a position past their maximum") {
  Registry& registry = in_tree_registry();
  Generator init(1), drop(2);
  BuildContext ctx;
  ctx.dims.d_model = 4;
  ctx.dims.max_length = 3;
  ctx.init = &init;
  ctx.dropout_rng = &drop;
  ctx.registry = &registry;
  ctx.options = Options::with_defaults(registry.find(PluginFamily::positional, "learned").options);
  auto learned = registry.make_positional("learned", ctx);
  CHECK(learned->forward(Tensor::zeros({1, 3, 4}), 0).shape() == Shape({1, 3, 4}));
  CHECK_THROWS_WITH_AS(learned->forward(Tensor::zeros({1, 2, 4}), 2),
                       doctest::Contains("positional learned: position 3 is past max_length 3"), Error);
  // The sinusoidal table has no such limit.
  ctx.options = Options::with_defaults(registry.find(PluginFamily::positional, "sinusoidal").options);
  auto sinusoidal = registry.make_positional("sinusoidal", ctx);
  CHECK(sinusoidal->forward(Tensor::zeros({1, 2, 4}), 50).shape() == Shape({1, 2, 4}));
}

TEST_CASE("the conformance kit holds a plugin to the tolerance of the dtype it computes in") {
  Registry registry;
  AttentionDeviceSupport cpu;
  cpu.dtypes = {DType::f32};
  PluginInfo info{.name = "rounds_to_bf16"};
  info.capabilities.devices = {cpu};
  registry.add_attention(info, [](const BuildContext&) -> std::shared_ptr<Attention> { return nullptr; });
  // f32 tensors computed in f32: f32's tolerance
  CHECK(conformance::attention_setup(registry, "rounds_to_bf16", {}).dtype == DType::f32);
  CHECK(conformance::attention_setup(registry, "rounds_to_bf16", {}).tol == doctest::Approx(1e-4));
  // f32 tensors computed in bf16: bf16's
  info.name = "computes_in_bf16";
  info.capabilities.devices[0].compute_dtype = DType::bf16;
  registry.add_attention(info, [](const BuildContext&) -> std::shared_ptr<Attention> { return nullptr; });
  CHECK(conformance::attention_setup(registry, "computes_in_bf16", {}).tol == doctest::Approx(5e-2));
  // an explicit tolerance wins
  ConformanceOptions options;
  options.tolerance = 2e-2;
  CHECK(conformance::attention_setup(registry, "computes_in_bf16", options).tol == doctest::Approx(2e-2));
  CHECK(describe_attention_support(info.capabilities.devices[0]).find("; computes in bf16") != std::string::npos);
}

TEST_CASE("the conformance comparisons fail on a NaN wherever it stands") {
  const double nan = std::nan("");
  const Tensor want = Tensor::from_vector<double>({4}, {1.0, 2.0, 3.0, 4.0});
  for (std::size_t at = 0; at < 4; ++at) {
    std::vector<double> v = {1.0, 2.0, 3.0, 4.0};
    v[at] = nan;
    const Tensor got = Tensor::from_vector<double>({4}, v);
    INFO("NaN at " << at);
    const std::string m = conformance::compare(got, want, 1e-3, "out");
    CHECK(m.find(fmt::format("element {}", at)) != std::string::npos);
    CHECK_FALSE(conformance::compare_close(got, want, 1e-3, "out").empty());
    CHECK_FALSE(conformance::compare_close(want, got, 1e-3, "out").empty());
  }
}

TEST_CASE("the conformance comparisons name the worst element past the tolerance") {
  const Tensor want = Tensor::from_vector<double>({4}, {0.0, 10.0, 0.0, 0.0});
  const Tensor got = Tensor::from_vector<double>({4}, {0.05, 10.3, 0.2, 0.0});
  CHECK(conformance::compare(got, want, 0.5, "out").empty());
  CHECK(conformance::compare(got, want, 0.1, "out").find("element 1 differs by 0.3") != std::string::npos);
  // Relative to 1 + |value|: element 1 is allowed 1.1, element 2 only 0.1.
  const std::string m = conformance::compare_close(got, want, 0.1, "out");
  CHECK(m.find("element 2 differs by 0.2") != std::string::npos);
  CHECK(m.find("tolerance 0.1") != std::string::npos);
  CHECK(conformance::compare(got, Tensor::from_vector<double>({2, 2}, {0.0, 10.0, 0.0, 0.0}), 1.0, "out")
            .find("shapes differ") != std::string::npos);
}

namespace {

// scaled_dot that refuses causal calls with fewer queries than keys and a key padding mask.
class RefusesPaddedOffset final : public Attention {
 public:
  explicit RefusesPaddedOffset(std::shared_ptr<Attention> inner) : inner_(register_module("inner", std::move(inner))) {}
  Tensor forward(const AttentionInputs& in) override {
    ATTNLAB_CHECK(!(in.causal && in.key_padding_mask.defined() && in.query.dim(1) > 1 &&
                    in.query.dim(1) < in.key.dim(1)),
                  "refuses_offset: causal queries over a longer padded key sequence are not supported");
    return inner_->forward(in);
  }

 private:
  std::shared_ptr<Attention> inner_;
};

// The result of the kit's check `name` for attention plugin `plugin` against scaled_dot.
std::optional<bool> reference_check(Registry& registry, const std::string& plugin, const std::string& name) {
  ConformanceOptions options;
  options.reference = "scaled_dot";
  for (const auto& c : run_conformance(registry, PluginFamily::attention, plugin, options).checks)
    if (c.name == name) return c.passed;
  return std::nullopt;
}

}  // namespace

TEST_CASE("a plugin that declares causal queries over longer padded keys unsupported must refuse them") {
  Registry registry;  // the in-tree plugins and two more, apart from the registry the other tests share
  PluginLoader loader(registry);
  loader.add_search_path(ATTNLAB_TEST_PLUGIN_DIR);
  loader.load_all();
  PluginInfo info = registry.find(PluginFamily::attention, "scaled_dot");
  info.capabilities.devices = {{.device = DeviceKind::cpu, .causal_longer_padded_keys = false}};
  info.name = "answers_offset";
  registry.add_attention(info, [&](const BuildContext& ctx) { return registry.make_attention("scaled_dot", ctx); });
  info.name = "refuses_offset";
  registry.add_attention(info, [&](const BuildContext& ctx) -> std::shared_ptr<Attention> {
    return std::make_shared<RefusesPaddedOffset>(registry.make_attention("scaled_dot", ctx));
  });
  const std::string check = "refuses causal queries over a longer padded key sequence, as it declares";
  CHECK(reference_check(registry, "refuses_offset", check) == std::optional<bool>(true));
  CHECK(reference_check(registry, "answers_offset", check) == std::optional<bool>(false));
  // A plugin that serves the case is compared on it.
  CHECK(reference_check(registry, "flash", "outputs and gradients match reference scaled_dot: causal queries over a "
                                           "longer padded key sequence") == std::optional<bool>(true));
}
