#include "run_folder.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "attnlab/build_info.h"
#include "attnlab/error.h"
#include "attnlab/nmt/io/file_util.h"

namespace attnlab::nmt::detail {

namespace fs = std::filesystem;

void claim_run_dir(const ExperimentConfig& config, const std::string& resolved) {
  fs::create_directories(config.run_dir);
  const fs::path path = fs::path(config.run_dir) / "config.toml";
  if (fs::exists(path)) {
    ATTNLAB_CHECK(read_file_bytes(path.string(), "run configuration") == resolved,
                  "run folder {} holds a run of another configuration ({} differs from {}); choose another "
                  "run_dir or remove the folder",
                  config.run_dir, path.string(), config.source_file);
    return;
  }
  write_file_atomic(path.string(), resolved);
}

void write_eval_settings(const ExperimentConfig& config) {
  write_file_atomic((fs::path(config.run_dir) / kRunEvalFile).string(), eval_to_toml(config.eval));
}

void copy_vocabulary(const std::string& run_dir, const Vocabulary& vocab) {
  const fs::path copy = fs::path(run_dir) / "vocab.model";
  if (fs::exists(copy)) return;
  write_file_atomic(copy.string(), read_file_bytes(vocab.model_path(), "SentencePiece model"));
}

nlohmann::json plugin_records(const ExperimentConfig& config, const PluginChoice& attention, const Registry& registry) {
  nlohmann::json list = nlohmann::json::array();
  auto add = [&](PluginFamily family, const PluginChoice& choice) {
    const PluginInfo& info = registry.find(family, choice.name);
    list.push_back({{"family", std::string(family_name(family))}, {"name", info.name}, {"version", info.version},
                    {"source", info.source}, {"build_id", core_build_id()}});
  };
  add(PluginFamily::attention, attention);
  add(PluginFamily::positional, config.model.positional);
  add(PluginFamily::ffn, config.model.ffn);
  add(PluginFamily::dropout, config.model.dropout_plugin);
  return list;
}

}  // namespace attnlab::nmt::detail
