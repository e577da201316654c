#include "attnlab/nmt/train/manifest.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attnlab/build_info.h"
#include "attnlab/env.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/io/atomic_file.h"
#include "attnlab/nmt/io/file_util.h"
#include "attnlab/nmt/io/hash.h"
#include "attnlab/threads.h"
#include "attnlab/version.h"
#include "attnlab_git_describe.h"
#include "run_folder.h"

namespace attnlab::nmt {
namespace {

// How the OpenMP threads waited: the policy the environment gave the OpenMP runtime.
std::string openmp_wait() {
  std::vector<std::string> parts;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"})
    if (const char* value = std::getenv(name)) parts.push_back(fmt::format("{}={}", name, value));
  return parts.empty() ? std::string("the OpenMP runtime's default") : fmt::format("{}", fmt::join(parts, " "));
}

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

json file_entry(const std::string& path) {
  if (path.empty()) return nullptr;
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  return {{"path", path}, {"bytes", ec ? -1 : static_cast<std::int64_t>(bytes)}, {"hash", ec ? "" : hash_file(path)}};
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? name : "unknown";
}

// Leaves of a JSON document by dotted path, as their JSON text.
void flatten(const json& j, const std::string& path, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, path.empty() ? k : path + "." + k, out);
    return;
  }
  out[path] = j.dump();
}

}  // namespace

std::string build_manifest(const ExperimentConfig& config, const std::string& resolved, const PluginChoice& attention,
                           const Registry& registry, const PreparedData& data, Device device, std::int64_t step) {
  json doc;
  doc["attnlab"] = {{"version", ATTNLAB_VERSION_STRING}, {"git", ATTNLAB_GIT_DESCRIBE}, {"build_id", core_build_id()}};
  doc["step"] = step;
  doc["written_at"] = utc_now();
  // The checkpoint's plugin records by family, each with the content hash of its library file.
  doc["plugins"] = json::object();
  for (json record : detail::plugin_records(config, attention, registry)) {
    const std::string source = record["source"];
    std::error_code ec;
    record["hash"] = fs::is_regular_file(source, ec) ? hash_file(source) : std::string();
    doc["plugins"][record["family"].get<std::string>()] = record;
  }
  doc["data"] = {{"train_source", file_entry(data.train_source)}, {"train_target", file_entry(data.train_target)},
                 {"dev_source", file_entry(data.dev_source)},     {"dev_target", file_entry(data.dev_target)},
                 {"test_source", file_entry(data.test_source)},   {"test_target", file_entry(data.test_target)}};
  doc["vocabulary"] = {{"hash", data.vocab.model_hash()}, {"size", data.vocab.size()}};
  json gpus = json::array();
  for (int i = 0; i < cuda_device_count(); ++i) gpus.push_back(describe_device(Device::cuda(i)));
  doc["machine"] = {{"host", host_name()},
                    {"device", device.str()},
                    {"description", describe_device(device)},
                    {"cpu", describe_device(Device::cpu())},
                    {"gpus", gpus},
                    {"threads", num_threads()},
                    {"openmp_wait", openmp_wait()}};
  // The environment's switches that change what a run computes (attnlab/env.h), as set.
  doc["environment"] = json::object();
  for (const auto& [name, text] : env::set_now(/*numerics_only=*/true)) doc["environment"][name] = text;
  doc["config"] = resolved;
  return doc.dump(2) + "\n";
}

void write_manifest(const std::string& run_dir, const std::string& manifest) {
  const fs::path path = fs::path(run_dir) / kManifestFile;
  if (fs::exists(path)) {
    const json previous = json::parse(detail::read_file_bytes(path.string(), "run manifest"), nullptr, false);
    if (!previous.is_discarded()) {
      std::ofstream history(fs::path(run_dir) / "manifest-history.jsonl", std::ios::app);
      history << previous.dump() << '\n';
    }
  }
  detail::write_file_atomic(path.string(), manifest);
}

std::vector<std::string> manifest_differences(std::string_view a, std::string_view b,
                                              const std::vector<std::string>& ignored) {
  const json ja = json::parse(a, nullptr, false), jb = json::parse(b, nullptr, false);
  ATTNLAB_CHECK(!ja.is_discarded() && ja.is_object(), "manifest: not a JSON object: {:.60}", std::string(a));
  ATTNLAB_CHECK(!jb.is_discarded() && jb.is_object(), "manifest: not a JSON object: {:.60}", std::string(b));
  std::map<std::string, std::string> fa, fb;
  flatten(ja, "", fa);
  flatten(jb, "", fb);
  auto skipped = [&](const std::string& path) {
    if (path == "step" || path == "written_at" || path == "config") return true;
    for (const auto& prefix : ignored)
      if (path == prefix || path.rfind(prefix + ".", 0) == 0) return true;
    return false;
  };
  std::vector<std::string> out;
  for (const auto& [path, value] : fa) {
    if (skipped(path)) continue;
    const auto it = fb.find(path);
    const std::string other = it == fb.end() ? "(missing)" : it->second;
    if (other != value) out.push_back(fmt::format("{}: {} vs {}", path, value, other));
  }
  for (const auto& [path, value] : fb)
    if (!skipped(path) && !fa.count(path)) out.push_back(fmt::format("{}: (missing) vs {}", path, value));
  return out;
}

std::vector<std::string> row_manifest_exemptions(const std::vector<std::string>& keys) {
  static const std::pair<const char*, const char*> plugin_tables[] = {{"model.attention", "plugins.attention"},
                                                                      {"model.positional", "plugins.positional"},
                                                                      {"model.ffn", "plugins.ffn"},
                                                                      {"model.dropout_plugin", "plugins.dropout"},
                                                                      {"model.norm", "plugins.norm"}};
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    for (const auto& [table, manifest] : plugin_tables)
      if (key.rfind(std::string(table) + ".", 0) == 0) out.emplace_back(manifest);
    if (key.rfind("data.", 0) == 0 || key.rfind("vocab.", 0) == 0) {
      out.emplace_back("data");
      out.emplace_back("vocabulary");
    }
    if (key == "experiment.device" || key == "experiment.threads") out.emplace_back("machine");
  }
  return out;
}

}  // namespace attnlab::nmt
