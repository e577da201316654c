#include "metrics_log.h"

#include <cerrno>
#include <filesystem>
#include <span>
#include <vector>

#include "attnlab/error.h"
#include "attnlab/nmt/io/atomic_file.h"
#include "attnlab/nmt/io/write_faults.h"

namespace attnlab::nmt {

MetricsLog::MetricsLog(const std::string& path, std::int64_t resume_step) : path_(path) {
  if (path.empty()) return;
  std::vector<std::string> kept;
  if (resume_step > 0 && std::filesystem::exists(path)) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      auto entry = nlohmann::json::parse(line, nullptr, false);
      if (entry.is_discarded() || !entry.contains("step")) continue;  // a torn last line
      if (entry["step"].get<std::int64_t>() > resume_step) continue;
      if (entry.value("kind", "") == "dev") dev_history_.push_back(entry["dev_ppl"].get<double>());
      kept.push_back(line);
    }
  }
  // The kept lines replace the file in one step (an interruption here leaves the old one), then
  // new lines are appended.
  std::string text;
  for (const auto& line : kept) text += line + '\n';
  write_file_atomically(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
  out_.open(path, std::ios::app);
  ATTNLAB_CHECK(out_.good(), "cannot open '{}' for appending: {}", path, describe_errno(errno));
  if (event_files_built())
    events_ = std::make_unique<EventFileWriter>(std::filesystem::path(path).parent_path().string(), "attnlab",
                                                resume_step > 0 ? std::optional<std::int64_t>(resume_step) : std::nullopt);
}

void MetricsLog::write_events(const nlohmann::json& entry) {
  if (!events_) return;
  // metrics.jsonl key -> TensorBoard tag, per kind of entry.
  static const std::pair<const char*, const char*> train[] = {
      {"loss", "train/loss"}, {"lr", "train/lr"}, {"tokens_per_second", "train/tokens_per_second"}};
  static const std::pair<const char*, const char*> dev[] = {{"dev_ppl", "dev/ppl"}, {"dev_smoothed_loss", "dev/loss"}};
  const std::string kind = entry.value("kind", "");
  const std::span<const std::pair<const char*, const char*>> tags =
      kind == "train" ? std::span(train) : kind == "dev" ? std::span(dev) : std::span<const std::pair<const char*, const char*>>();
  const auto step = entry.value("step", std::int64_t{0});
  for (const auto& [key, tag] : tags)
    if (entry.contains(key)) events_->scalar(tag, step, entry[key].get<double>());
}

void MetricsLog::write(const nlohmann::json& entry) {
  if (!path_.empty()) {
    errno = 0;
    out_ << entry.dump() << '\n';
    out_.flush();
    ATTNLAB_CHECK(out_.good(), "writing '{}' failed: {}", path_, describe_errno(errno != 0 ? errno : EIO));
    write_events(entry);
  }
  if (entry.value("kind", "") == "dev") dev_history_.push_back(entry["dev_ppl"].get<double>());
}

}  // namespace attnlab::nmt
