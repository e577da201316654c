// The only file that includes Boost.DLL.
#include "attnlab/plugin/loader.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <sstream>

#define BOOST_DLL_USE_STD_FS
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include "attnlab/build_info.h"
#include "attnlab/env.h"
#include "attnlab/error.h"
#include "attnlab/plugin/plugin_api.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

// Loaded libraries stay loaded for the life of the process: registered factories, vtables and
// CUDA images inside them may be referenced until exit. The vector is never destroyed.
std::vector<boost::dll::shared_library>& libraries() {
  static auto* libs = new std::vector<boost::dll::shared_library>();
  return *libs;
}
std::mutex& load_mutex() {
  static std::mutex m;
  return m;
}

bool is_plugin_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.starts_with("attnlab_") && p.extension() == ".so";
}

}  // namespace

PluginLoader::PluginLoader(Registry& registry) : registry_(registry) {}

void PluginLoader::add_search_path(const fs::path& folder) { extra_paths_.push_back(folder); }

std::vector<fs::path> PluginLoader::search_path() const {
  std::vector<fs::path> out = extra_paths_;
  if (const std::optional<std::string> folders = env::value("ATTNLAB_PLUGIN_PATH")) {
    std::stringstream ss(*folders);
    std::string item;
    while (std::getline(ss, item, ':'))
      if (!item.empty()) out.emplace_back(item);
  }
  // <prefix>/lib/libattnlab_core.so -> <prefix>/lib/attnlab/plugins (the build tree has the same
  // layout).
  const fs::path core = boost::dll::this_line_location();
  out.push_back(core.parent_path() / "attnlab" / "plugins");
  return out;
}

LoadedLibrary PluginLoader::load(const fs::path& file) {
  std::lock_guard lock(load_mutex());
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(file, ec);
  const std::string path = (ec ? file : canonical).string();
  for (const auto& done : loaded_)
    if (done.path == path) return done;
  ATTNLAB_CHECK(fs::exists(path), "plugin library {} does not exist", path);

  boost::dll::shared_library lib;
  try {
    lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw Error(fmt::format("cannot load plugin library {}: {}", path, e.what()));
  }
  ATTNLAB_CHECK(lib.has("attnlab_plugin_entry"),
                "{} is not an attnlab plugin: it exports no '{}' entry point (build it with the "
                "ATTNLAB_PLUGIN macro from attnlab/plugin/plugin_api.h)",
                path, ATTNLAB_PLUGIN_ENTRY_SYMBOL);
  const auto* entry = lib.get<const attnlab_plugin_entry_t*()>("attnlab_plugin_entry")();
  ATTNLAB_CHECK(entry != nullptr, "{}: the plugin entry point returned null", path);
  // The ABI version is the first field and is read before anything else.
  ATTNLAB_CHECK(entry->abi_version == ATTNLAB_PLUGIN_ABI_VERSION,
                "{}: plugin ABI version {} but this attnlab ({}) uses ABI version {}; rebuild the "
                "plugin against this attnlab",
                path, entry->abi_version, core_version(), ATTNLAB_PLUGIN_ABI_VERSION);
  const std::string build_id = entry->build_id ? entry->build_id : "";
  ATTNLAB_CHECK(build_id == core_build_id(),
                "{}: plugin built against a different attnlab core: plugin build id '{}', core "
                "build id '{}'; rebuild the plugin against this attnlab",
                path, build_id, core_build_id());

  LoadedLibrary info{path, entry->name ? entry->name : "", entry->version ? entry->version : "",
                     build_id, entry->description ? entry->description : ""};
  registry_.set_current_source(path);
  try {
    entry->register_fn(&registry_);
  } catch (...) {
    registry_.set_current_source("built-in");
    throw;
  }
  registry_.set_current_source("built-in");
  libraries().push_back(std::move(lib));
  loaded_.push_back(info);
  return info;
}

std::vector<LoadedLibrary> PluginLoader::load_all() {
  std::vector<LoadedLibrary> out;
  std::vector<std::string> seen;
  for (const fs::path& folder : search_path()) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& item : fs::directory_iterator(folder, ec))
      if (item.is_regular_file() && is_plugin_file(item.path())) files.push_back(item.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const std::string name = f.filename().string();
      if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
      seen.push_back(name);
      try {
        out.push_back(load(f));
      } catch (const Error& e) {
        failures_.push_back({f.string(), e.what()});
      }
    }
  }
  return out;
}

}  // namespace attnlab
