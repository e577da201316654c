#pragma once
// RUN/manifest.json: what a run was made of, written when training starts and again on every
// resume (the previous one is appended to RUN/manifest-history.jsonl):
//   attnlab      version, git description of the source tree, core build id
//   plugins      per family: the checkpoint's plugin record (name, version, source: the library
//                file, build id) and the content hash of the file
//   data         train/dev/test source and target: path, size in bytes, content hash
//   vocabulary   hash and size
//   machine      host, the training device and what it is, the CPU (model, hardware threads), every
//                visible GPU (name, memory, compute capability, driver), threads used
//   config       the resolved experiment (TOML)
//   step, written_at
// `attnlab report` links every row's manifest and flags rows whose manifests disagree with the
// base row's in anything but what the row itself sets (manifest_differences).
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::nmt {

struct PreparedData;

inline constexpr const char* kManifestFile = "manifest.json";

// The manifest of a run of `config` (its resolved TOML `resolved`), whose attention layers were
// built by `attention` (the named plugin or its fallback), as JSON text.
std::string build_manifest(const ExperimentConfig& config, const std::string& resolved, const PluginChoice& attention,
                           const Registry& registry, const PreparedData& data, Device device, std::int64_t step);

// Writes RUN/manifest.json atomically, first appending an existing one to manifest-history.jsonl.
void write_manifest(const std::string& run_dir, const std::string& manifest);

// The leaves (dotted paths, e.g. "plugins.attention.hash") where two manifests differ, as
// "path: a vs b", leaving out step, written_at and config, and every path that starts with one of
// `ignored` (what a suite row sets itself: row_manifest_exemptions). Throws an Error naming the
// text that is not a JSON object.
std::vector<std::string> manifest_differences(std::string_view a, std::string_view b,
                                              const std::vector<std::string>& ignored = {});

// The manifest paths a suite row's settings (dotted experiment keys such as
// "model.positional.name") may legitimately change: plugins.<family> for a plugin's table,
// data and vocabulary for data. and vocab. keys, machine for experiment.device and .threads.
std::vector<std::string> row_manifest_exemptions(const std::vector<std::string>& setting_keys);

}  // namespace attnlab::nmt
