#pragma once
// The in-tree plugins, loaded once per test program from ATTNLAB_TEST_PLUGIN_DIR (the build's
// plugin folder, defined by tests/CMakeLists.txt for the suites that load plugins).
#include <string>
#include <vector>

#include "attnlab/plugin/loader.h"

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

}  // namespace attnlab::testing
