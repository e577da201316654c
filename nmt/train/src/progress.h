#pragma once
// Internal to the trainer: what it says while it runs. A live status line on a terminal, and every
// log_every steps a log line and a metrics.jsonl entry (loss, rate, throughput, ETA).
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/nmt/experiment/experiment.h"
#include "metrics_log.h"
#include "training_state.h"

namespace attnlab::nmt::detail {

using Clock = std::chrono::steady_clock;
using LogFn = std::function<void(const std::string&)>;

double seconds_since(Clock::time_point t);

class Progress {
 public:
  // `live`: draw the status line (stderr is a terminal and nobody else takes the lines).
  // `ranks`: processes of a data-parallel run (1: a single process).
  Progress(const TrainingConfig& training, std::int64_t first_step, Clock::time_point start, bool live,
           LogFn log, MetricsLog& metrics, int ranks = 1);

  // After each step. Returns the mean loss of the window it closed, when it logged.
  std::optional<double> after_step(std::int64_t step, const StepTotals& totals);

  std::int64_t total_tokens() const { return total_tokens_; }
  // The share of the time since the start not spent summing over the ranks (1 in one process).
  double compute_share() const;

 private:
  const TrainingConfig& training_;
  std::int64_t first_step_;
  Clock::time_point start_, last_status_;
  bool live_;
  LogFn log_;
  MetricsLog& metrics_;
  int ranks_;
  // The window's loss sum, on the training device (an f64 scalar; undefined before its first step):
  // read, with a wait for the device, only for the log line and the live status line.
  Tensor window_loss_;
  double window_tokens_ = 0.0, window_start_ = 0.0;
  double window_exchange_ = 0.0, total_exchange_ = 0.0;
  // Gradient clipping: the norm of each step of the window, on the training device, read together
  // when the window is logged.
  std::vector<Tensor> window_norms_;
  std::int64_t window_steps_ = 0;
  std::int64_t total_tokens_ = 0;

  double window_loss() const;
};

// Early stopping: the best dev perplexity so far and the evaluations since it improved (seeded
// from the metrics of an interrupted run).
class DevTracker {
 public:
  explicit DevTracker(const std::vector<double>& history) {
    for (double ppl : history) record(ppl);
  }
  void record(double ppl) {
    if (!best_ || ppl < *best_) best_ = ppl, without_gain_ = 0;
    else ++without_gain_;
  }
  std::optional<double> best() const { return best_; }
  std::int64_t evals_without_gain() const { return without_gain_; }

 private:
  std::optional<double> best_;
  std::int64_t without_gain_ = 0;
};

}  // namespace attnlab::nmt::detail
