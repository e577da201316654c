#pragma once
// What a run folder's metrics.jsonl (metrics_log.h) says about its training: parameters, the last
// step, the training time summed over every invocation of the trainer, the last throughput, and
// the learning curves. Shared by the suite runner (result.json) and the report. A torn last line
// (the trainer was killed while writing) is skipped.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attnlab::nmt {

// One point of a learning curve.
struct CurvePoint {
  std::int64_t step = 0;
  double value = 0.0;
};

struct TrainingSummary {
  std::int64_t parameters = 0;
  std::int64_t last_step = 0;
  double seconds = 0.0;
  double tokens_per_second = 0.0;
  // Seconds per step of the latest invocation, from its last two log lines (0: not yet known).
  double seconds_per_step = 0.0;
  std::vector<CurvePoint> train_loss, dev_ppl;
};

// A duration as the trainer's log and `attnlab status` print it: "42s", "3m07s", "1h05m"; "?" when
// negative or not finite.
std::string duration_str(double seconds);

// An empty summary when the file does not exist.
TrainingSummary read_training_summary(const std::filesystem::path& metrics_jsonl);

}  // namespace attnlab::nmt
