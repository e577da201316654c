#include "attnlab/nmt/train/training_summary.h"

#include <fstream>
#include <optional>
#include <utility>
#include <string>

#include <nlohmann/json.hpp>

namespace attnlab::nmt {

TrainingSummary read_training_summary(const std::filesystem::path& metrics_jsonl) {
  TrainingSummary s;
  std::ifstream in(metrics_jsonl, std::ios::binary);
  double segment = 0.0;  // the elapsed time of the current invocation
  std::optional<std::pair<std::int64_t, double>> previous;  // (step, elapsed) of its last log line
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number()) continue;
    const std::string kind = j.value("kind", "");
    const auto step = j["step"].get<std::int64_t>();
    if (kind == "start") {
      s.seconds += segment;
      segment = 0.0;
      previous.reset();
      s.parameters = j.value("parameters", s.parameters);
    } else if (kind == "train") {
      segment = j.value("elapsed", segment);
      if (previous && step > previous->first && segment > previous->second)
        s.seconds_per_step = (segment - previous->second) / static_cast<double>(step - previous->first);
      previous = std::pair(step, segment);
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
