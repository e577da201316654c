#include "run_folder.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "attnlab/build_info.h"
#include "attnlab/error.h"
#include "attnlab/nmt/io/file_util.h"

namespace attnlab::nmt::detail {

namespace fs = std::filesystem;

namespace {

// The settings (lines of the resolved TOML, with their table) where two configurations differ,
// as "[table] key = a (the run) vs key = b (this experiment)", at most `most` of them.
std::string config_differences(const std::string& run, const std::string& mine, std::size_t most = 4) {
  const auto settings = [](const std::string& text) {
    std::vector<std::string> out;
    std::string table, line;
    std::istringstream in(text);
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      if (line.front() == '[') table = line;
      else out.push_back(table + " " + line);
    }
    return out;
  };
  const auto a = settings(run), b = settings(mine);
  const auto key = [](const std::string& s) { return s.substr(0, s.find(" = ")); };
  std::vector<std::string> diffs;
  for (const auto& s : a) {
    if (std::find(b.begin(), b.end(), s) != b.end()) continue;
    const auto other = std::find_if(b.begin(), b.end(), [&](const std::string& t) { return key(t) == key(s); });
    diffs.push_back(other == b.end() ? fmt::format("{} (the run; absent here)", s)
                                     : fmt::format("{} (the run) vs {} (this experiment)", s,
                                                   other->substr(other->find(" = ") + 3)));
  }
  for (const auto& s : b)
    if (std::none_of(a.begin(), a.end(), [&](const std::string& t) { return key(t) == key(s); }))
      diffs.push_back(fmt::format("{} (this experiment; absent in the run)", s));
  if (diffs.size() > most) {
    const std::size_t more = diffs.size() - most;
    diffs.resize(most);
    diffs.push_back(fmt::format("and {} more", more));
  }
  return fmt::format("{}", fmt::join(diffs, "; "));
}

}  // namespace

void claim_run_dir(const ExperimentConfig& config, const std::string& resolved) {
  fs::create_directories(config.run_dir);
  const fs::path path = fs::path(config.run_dir) / "config.toml";
  if (fs::exists(path)) {
    const std::string run = read_file_bytes(path.string(), "run configuration");
    ATTNLAB_CHECK(run == resolved,
                  "run folder {} holds a run of another configuration ({} differs from {}: {}); choose another "
                  "run_dir or remove the folder",
                  config.run_dir, path.string(), config.source_file, config_differences(run, resolved));
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
  add(PluginFamily::norm, config.model.norm);
  return list;
}

}  // namespace attnlab::nmt::detail
