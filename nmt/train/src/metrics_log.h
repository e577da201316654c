#pragma once
// <run_dir>/metrics.jsonl: one JSON object per line, each with a "step" and a "kind"
// ("train", "dev", "checkpoint", "start"); beside it a TensorBoard event file of the same curves
// (train/loss, train/lr, train/tokens_per_second, dev/ppl, dev/loss), one file per start of the
// run (a resumed run's file starts with a restart marker at the resumed step).
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "attnlab/nmt/io/event_file.h"

namespace attnlab::nmt {

class MetricsLog {
 public:
  // Keeps the entries up to `resume_step` (a resumed run drops what the interrupted run logged
  // after its last checkpoint) and appends from there. An empty path writes nothing (the ranks
  // other than 0 of a data-parallel run).
  MetricsLog(const std::string& path, std::int64_t resume_step);
  void write(const nlohmann::json& entry);
  // The dev perplexities logged so far, for early stopping after a resume.
  const std::vector<double>& dev_history() const { return dev_history_; }

 private:
  void write_events(const nlohmann::json& entry);
  std::string path_;
  std::ofstream out_;
  std::unique_ptr<EventFileWriter> events_;
  std::vector<double> dev_history_;
};

}  // namespace attnlab::nmt
