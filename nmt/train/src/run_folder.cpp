#include "run_folder.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>

#include <nlohmann/json.hpp>

#include "attnlab/build_info.h"
#include "attnlab/error.h"
#include "attnlab/nmt/io/atomic_file.h"

namespace attnlab::nmt::detail {

namespace fs = std::filesystem;

void claim_run_dir(const ExperimentConfig& config, const std::string& resolved) {
  fs::create_directories(config.run_dir);
  const fs::path path = fs::path(config.run_dir) / "config.toml";
  if (fs::exists(path)) {
    std::ifstream in(path);
    std::stringstream existing;
    existing << in.rdbuf();
    ATTNLAB_CHECK(existing.str() == resolved,
                  "run folder {} holds a run of another configuration ({} differs from {}); choose another "
                  "run_dir or remove the folder",
                  config.run_dir, path.string(), config.source_file);
    return;
  }
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << resolved;
  }
  fs::rename(tmp, path);
}

void write_eval_settings(const ExperimentConfig& config) {
  const std::string text = eval_to_toml(config.eval);
  write_file_atomically(fs::path(config.run_dir) / kRunEvalFile,
                        std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void copy_vocabulary(const std::string& run_dir, const Vocabulary& vocab) {
  const fs::path copy = fs::path(run_dir) / "vocab.model";
  if (fs::exists(copy)) return;
  std::ifstream in(vocab.model_path(), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_file_atomically(copy, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

std::string plugins_json(const ExperimentConfig& config, const PluginChoice& attention, const Registry& registry) {
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
  return list.dump();
}

}  // namespace attnlab::nmt::detail
