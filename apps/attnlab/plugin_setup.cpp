#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/plugin/loader.h"

namespace attnlab::app {

const Registry& load_plugins(const std::vector<std::string>& extra_paths) {
  PluginLoader loader;
  for (const auto& p : extra_paths) loader.add_search_path(p);
  loader.load_all();
  for (const auto& f : loader.failures()) fmt::print(stderr, "note: plugin not loaded: {}\n", f.message);
  return Registry::global();
}

}  // namespace attnlab::app
