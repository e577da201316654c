// Every in-tree plugin passes the conformance kit of its family; a broken plugin does not.
#include <doctest/doctest.h>

#include "attnlab/plugin/conformance.h"
#include "attnlab/plugin/loader.h"

using namespace attnlab;

namespace {

Registry& in_tree_registry() {
  static Registry registry;
  static bool loaded = false;
  if (!loaded) {
    PluginLoader loader(registry);
    loader.add_search_path(ATTNLAB_TEST_PLUGIN_DIR);
    loader.load_all();
    REQUIRE(loader.failures().empty());
    loaded = true;
  }
  return registry;
}

// Plugins that compute on CUDA devices only; the cuda suite runs the kit on them
// (tests/cuda/test_cuda_cudnn_attention.cpp). Here the kit must call them not applicable.
bool cuda_only(PluginFamily family, const std::string& name) {
  return family == PluginFamily::attention && name == "cudnn";
}

void check_family(PluginFamily family, std::size_t at_least) {
  Registry& registry = in_tree_registry();
  const auto plugins = registry.list(family);
  CHECK(plugins.size() >= at_least);
  for (const auto& p : plugins) {
    if (cuda_only(family, p.name)) {
      ConformanceOptions options;  // head sizes it accepts, so that the kit gets as far as the device
      options.d_k = 8;
      options.d_v = 16;
      const ConformanceReport report = run_conformance(registry, family, p.name, options);
      CHECK_MESSAGE(!report.not_applicable.empty(), p.name, " runs on CUDA only but the kit ran on the CPU:\n",
                    report.summary());
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
