#pragma once
// Internal to the trainer: what a run folder holds besides checkpoints and metrics, written before
// the first step.
#include <string>

#include <nlohmann/json.hpp>

#include "attnlab/nmt/data/vocabulary.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::nmt::detail {

// RUN/config.toml: a run folder belongs to one configuration. Creates the folder and the file
// (`resolved`, the experiment as to_toml writes it without [eval]), or refuses a folder whose file
// differs: a run of another configuration.
void claim_run_dir(const ExperimentConfig& config, const std::string& resolved);

// RUN/eval.toml: the [eval] table `attnlab eval` follows; rewritten on every start, since the
// evaluation settings do not change what is trained.
void write_eval_settings(const ExperimentConfig& config);

// RUN/vocab.model: the run folder carries its vocabulary, so translate and eval need nothing from
// the cache. Written once.
void copy_vocabulary(const std::string& run_dir, const Vocabulary& vocab);

// The plugins that built the model, one object per family (family, name, version, source: the
// library file, build_id), the attention plugin being the one that serves the model (the named one
// or its fallback). A checkpoint records them (plugins_json); the run manifest adds their hashes.
nlohmann::json plugin_records(const ExperimentConfig& config, const PluginChoice& attention, const Registry& registry);
inline std::string plugins_json(const ExperimentConfig& config, const PluginChoice& attention,
                                const Registry& registry) {
  return plugin_records(config, attention, registry).dump();
}

}  // namespace attnlab::nmt::detail
