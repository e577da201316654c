#include "metrics_log.h"

#include <filesystem>
#include <vector>

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
  out_.open(path, std::ios::trunc);
  for (const auto& line : kept) out_ << line << '\n';
  out_.flush();
}

void MetricsLog::write(const nlohmann::json& entry) {
  if (!path_.empty()) {
    out_ << entry.dump() << '\n';
    out_.flush();
  }
  if (entry.value("kind", "") == "dev") dev_history_.push_back(entry["dev_ppl"].get<double>());
}

}  // namespace attnlab::nmt
