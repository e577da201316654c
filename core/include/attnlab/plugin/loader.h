#pragma once
// Finds and loads plugin libraries at run time.
//
// Search path, in order: folders added with add_search_path() (an experiment's plugin_paths),
// the folders of $ATTNLAB_PLUGIN_PATH (colon-separated), then the install's plugin folder
// (<prefix>/lib/attnlab/plugins, found relative to the core library). A plugin library is a file
// named attnlab_*.so in one of them.
#include <filesystem>
#include <string>
#include <vector>

#include "attnlab/plugin/registry.h"

namespace attnlab {

struct LoadedLibrary {
  std::string path;
  std::string name;
  std::string version;
  std::string build_id;
  std::string description;
};

class PluginLoader {
 public:
  explicit PluginLoader(Registry& registry = Registry::global());

  void add_search_path(const std::filesystem::path& folder);
  std::vector<std::filesystem::path> search_path() const;

  // Loads one library: checks the entry point, the ABI version and the build id, then lets it
  // register. Throws an Error naming the file and both values on a mismatch. Loading the same
  // file twice is a no-op.
  LoadedLibrary load(const std::filesystem::path& file);
  // Loads every attnlab_*.so on the search path (first occurrence of a file name wins). A library
  // that fails to load does not stop the others: its error is kept in failures().
  std::vector<LoadedLibrary> load_all();
  const std::vector<LoadedLibrary>& loaded() const { return loaded_; }
  struct Failure {
    std::string path;
    std::string message;
  };
  const std::vector<Failure>& failures() const { return failures_; }

 private:
  Registry& registry_;
  std::vector<std::filesystem::path> extra_paths_;
  std::vector<LoadedLibrary> loaded_;
  std::vector<Failure> failures_;
};

}  // namespace attnlab
