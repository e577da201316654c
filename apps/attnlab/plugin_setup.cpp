#include <set>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/suite/row_policy.h"
#include "attnlab/plugin/loader.h"

namespace attnlab::app {

const Registry& load_plugins(const std::vector<std::string>& extra_paths) {
  PluginLoader loader;
  for (const auto& p : extra_paths) loader.add_search_path(p);
  loader.load_all();
  for (const auto& f : loader.failures()) fmt::print(stderr, "note: plugin not loaded: {}\n", f.message);
  return Registry::global();
}

const Registry& load_suite_plugins(nmt::Suite& suite) {
  std::set<std::string> paths;
  for (const auto& row : suite.rows) paths.insert(row.config.plugin_paths.begin(), row.config.plugin_paths.end());
  const Registry& registry = load_plugins({paths.begin(), paths.end()});
  try {
    nmt::apply_unsupported(suite, registry);
  } catch (const Error& e) {
    throw Error(nmt::name_environment(suite.environment, e.what()));
  }
  return registry;
}

}  // namespace attnlab::app
