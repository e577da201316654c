#pragma once
// The folder where compiled score-expression kernels are kept between runs: an artifact (a shared
// object, a CUDA binary) named by a hash of everything that made it, beside the source it was made
// from. Parallel processes share it: the first to need an artifact makes it under a lock on its
// name and renames it into place; the others wait on the lock and load it. A second run finds
// every artifact and compiles nothing.
#include <filesystem>
#include <functional>
#include <string>

namespace attnlab::expr {

// $ATTNLAB_KERNEL_CACHE, else $XDG_CACHE_HOME/attnlab/kernels, else ~/.cache/attnlab/kernels
// (created when first used).
std::filesystem::path kernel_cache_dir();

struct Cached {
  std::filesystem::path path;  // the artifact
  bool made_now = false;       // made by this call (false: found)
};

// Where the artifact of `key` (a file name stem) is: `<dir>/<key><extension>`, beside
// `<dir>/<key>.src` holding `source`. Found when both are there and the source is the same;
// otherwise made by make(source_file, out_file) (out_file is a temporary name renamed into place
// afterwards), which throws an Error when it cannot.
Cached cached_artifact(const std::string& key, const std::string& extension, const std::string& source,
                       const std::function<void(const std::filesystem::path&, const std::filesystem::path&)>& make);

// Whether the artifact of `key` is in the folder now (for `attnlab check`).
bool artifact_present(const std::string& key, const std::string& extension, const std::string& source);

// A 64-bit hash of `text` as 16 hex digits (FNV-1a).
std::string hash_hex(const std::string& text);

}  // namespace attnlab::expr
