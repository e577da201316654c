#pragma once
// <run_dir>/metrics.jsonl: one JSON object per line, each with a "step" and a "kind"
// ("train", "dev", "checkpoint", "start").
#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

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
  std::string path_;
  std::ofstream out_;
  std::vector<double> dev_history_;
};

}  // namespace attnlab::nmt
