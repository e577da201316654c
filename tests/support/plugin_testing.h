#pragma once
// The in-tree plugins, loaded once per test program from ATTNLAB_TEST_PLUGIN_DIR (the build's
// plugin folder, defined by tests/CMakeLists.txt for the suites that load plugins), and a
// positional plugin's part inside attention built on its own.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/plugin/loader.h"
#include "attnlab/random.h"

namespace attnlab::testing {

struct InTreePlugins {
  Registry registry;
  std::vector<std::string> failures;  // "path: message" of each file that did not load
};

inline InTreePlugins& in_tree_plugins() {
  static InTreePlugins plugins;
  static const bool loaded = [] {
    PluginLoader loader(plugins.registry);
    loader.add_search_path(ATTNLAB_TEST_PLUGIN_DIR);
    loader.load_all();
    for (const auto& f : loader.failures()) plugins.failures.push_back(f.path + ": " + f.message);
    return true;
  }();
  (void)loaded;
  return plugins;
}

// A positional plugin built in f64 on the CPU for `heads` heads of d_k and d_v, with its part
// inside self-attention (null when it has none) and the generators it was built from.
struct PositionsPart {
  std::unique_ptr<Generator> init = std::make_unique<Generator>(3), dropout = std::make_unique<Generator>(4);
  std::shared_ptr<PositionalEncoding> encoding;
  std::shared_ptr<AttentionPositions> inside;
};
inline PositionsPart build_positions(const Registry& registry, const std::string& name, std::int64_t heads,
                                     std::int64_t d_k, std::int64_t d_v,
                                     const std::map<std::string, OptionValue>& options = {}) {
  PositionsPart p;
  BuildContext ctx;
  ctx.dims = {.d_model = 8, .n_heads = heads, .d_k = d_k, .d_v = d_v, .d_ff = 8, .max_length = 64};
  ctx.dtype = DType::f64;
  ctx.init = p.init.get();
  ctx.dropout_rng = p.dropout.get();
  ctx.registry = &registry;
  ctx.options = Options::with_defaults(registry.find(PluginFamily::positional, name).options, options);
  p.encoding = registry.make_positional(name, ctx);
  p.inside = p.encoding->attention_positions(ctx);
  return p;
}

// An attention plugin built with its default options, the generators it was built from kept with
// it (seeds init_seed and init_seed + 1).
struct BuiltAttention {
  std::unique_ptr<Generator> init, dropout;
  std::shared_ptr<Attention> module;
};
inline BuiltAttention build_attention(const Registry& registry, const std::string& name, const ModelDims& dims,
                                      Device device, DType dtype, double attention_dropout, std::uint64_t init_seed) {
  BuiltAttention b{std::make_unique<Generator>(init_seed), std::make_unique<Generator>(init_seed + 1), nullptr};
  BuildContext ctx;
  ctx.dims = dims;
  ctx.dropout.attention = attention_dropout;
  ctx.device = device;
  ctx.dtype = dtype;
  ctx.init = b.init.get();
  ctx.dropout_rng = b.dropout.get();
  ctx.registry = &registry;
  ctx.options = Options::with_defaults(registry.find(PluginFamily::attention, name).options);
  b.module = registry.make_attention(name, ctx);
  return b;
}

}  // namespace attnlab::testing
