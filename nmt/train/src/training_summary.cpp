#include "attnlab/nmt/train/training_summary.h"

#include <cmath>
#include <fstream>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace attnlab::nmt {

std::string duration_str(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto total = static_cast<std::int64_t>(s + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, total % 3600 / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

TrainingSummary read_training_summary(const std::filesystem::path& metrics_jsonl) {
  TrainingSummary s;
  std::ifstream in(metrics_jsonl, std::ios::binary);
  double segment = 0.0;  // the elapsed time of the current invocation
  std::int64_t previous_step = -1;  // the step and elapsed time of its last log line (-1: none yet)
  double previous_elapsed = 0.0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number()) continue;
    const std::string kind = j.value("kind", "");
    const auto step = j["step"].get<std::int64_t>();
    if (kind == "start") {
      s.seconds += segment;
      segment = 0.0;
      previous_step = -1;
      s.parameters = j.value("parameters", s.parameters);
    } else if (kind == "train") {
      segment = j.value("elapsed", segment);
      if (previous_step >= 0 && step > previous_step && segment > previous_elapsed)
        s.seconds_per_step = (segment - previous_elapsed) / static_cast<double>(step - previous_step);
      previous_step = step, previous_elapsed = segment;
      s.tokens_per_second = j.value("tokens_per_second", s.tokens_per_second);
      s.last_step = std::max(s.last_step, step);
      if (j.contains("loss") && j["loss"].is_number()) s.train_loss.push_back({step, j["loss"].get<double>()});
    } else if (kind == "dev" && j.contains("dev_ppl") && j["dev_ppl"].is_number()) {
      s.dev_ppl.push_back({step, j["dev_ppl"].get<double>()});
    }
  }
  s.seconds += segment;
  return s;
}

}  // namespace attnlab::nmt
