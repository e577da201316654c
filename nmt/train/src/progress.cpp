#include "progress.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "attnlab/nmt/train/training_summary.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/ops/binary.h"
#include "attnlab/ops/shape_ops.h"

namespace attnlab::nmt::detail {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Progress::Progress(const TrainingConfig& training, std::int64_t first_step, Clock::time_point start, bool live,
                   LogFn log, MetricsLog& metrics, int ranks)
    : training_(training),
      first_step_(first_step),
      start_(start),
      last_status_(Clock::now()),
      live_(live),
      log_(std::move(log)),
      metrics_(metrics),
      ranks_(ranks) {}

double Progress::compute_share() const {
  const double elapsed = seconds_since(start_);
  return elapsed > 0 ? std::clamp(1.0 - total_exchange_ / elapsed, 0.0, 1.0) : 1.0;
}

double Progress::window_loss() const { return window_loss_.defined() ? window_loss_.item() : 0.0; }

std::optional<double> Progress::after_step(std::int64_t step, const StepTotals& totals) {
  const TrainingConfig& tc = training_;
  if (totals.loss_sum.defined())
    window_loss_ = window_loss_.defined() ? add(window_loss_, totals.loss_sum) : totals.loss_sum;
  window_tokens_ += static_cast<double>(totals.tokens);
  total_tokens_ += totals.tokens;
  window_exchange_ += totals.exchange_seconds;
  total_exchange_ += totals.exchange_seconds;
  if (totals.grad_norm.defined()) window_norms_.push_back(totals.grad_norm.reshape({1}));
  ++window_steps_;
  if (live_ && seconds_since(last_status_) > 0.2) {
    // A live status line between the permanent log lines.
    const double elapsed = seconds_since(start_);
    const double per_step = elapsed / static_cast<double>(step - first_step_);
    const int width = 30;
    const auto filled = static_cast<int>(width * static_cast<double>(step) / static_cast<double>(tc.max_steps));
    fmt::print(stderr, "\r\033[K[{}{}] {}/{} | loss {:.4f} | {:.0f} tok/s | ETA {}", std::string(filled, '#'),
               std::string(width - filled, '.'), step, tc.max_steps, window_loss() / std::max(window_tokens_, 1.0),
               static_cast<double>(total_tokens_) / std::max(elapsed, 1e-9),
               duration_str(per_step * static_cast<double>(tc.max_steps - step)));
    last_status_ = Clock::now();
  }
  if (step % tc.log_every != 0 && step != tc.max_steps) return std::nullopt;
  const double elapsed = seconds_since(start_);
  const double rate = static_cast<double>(total_tokens_) / std::max(elapsed, 1e-9);
  const double per_step = elapsed / static_cast<double>(step - first_step_);
  const double loss = window_loss() / std::max(window_tokens_, 1.0);
  const double window_seconds = elapsed - window_start_;
  // In a data-parallel run: how much of the window went to summing gradients over the ranks.
  const std::string exchange =
      ranks_ > 1 ? fmt::format(" | {} ranks, exchange {:.1f}%", ranks_,
                               100.0 * window_exchange_ / std::max(window_seconds, 1e-9))
                 : std::string();
  // With clipping on: the window's largest gradient norm and how many of its steps were clipped
  // (the norms in one download, the decision as the step made it).
  double max_norm = -1.0;
  std::int64_t clipped = 0;
  if (!window_norms_.empty()) {
    for (const double norm : concat(window_norms_, 0).to_vector<double>()) {
      max_norm = std::max(max_norm, norm);
      clipped += clip_factor(norm, tc.clip_norm) < 1.0 ? 1 : 0;
    }
  }
  const std::string clipping =
      max_norm >= 0 ? fmt::format(" | grad norm <= {:.3g}, {} of {} steps clipped", max_norm, clipped, window_steps_)
                    : std::string();
  log_(fmt::format("step {}/{} | loss {:.4f} | lr {:.3e}{} | {:.0f} tok/s{} | {} elapsed | ETA {}", step,
                   tc.max_steps, loss, totals.lr, clipping, rate, exchange, duration_str(elapsed),
                   duration_str(per_step * static_cast<double>(tc.max_steps - step))));
  nlohmann::json entry = {{"kind", "train"}, {"step", step}, {"loss", loss}, {"lr", totals.lr},
                          {"tokens_per_second", rate}, {"elapsed", elapsed}, {"window_seconds", window_seconds}};
  if (ranks_ > 1) entry["ranks"] = ranks_, entry["exchange_seconds"] = window_exchange_;
  if (max_norm >= 0) entry["max_grad_norm"] = max_norm, entry["clipped_steps"] = clipped;
  metrics_.write(entry);
  window_loss_ = Tensor();
  window_tokens_ = window_exchange_ = 0.0;
  window_norms_.clear();
  window_steps_ = 0;
  window_start_ = elapsed;
  return loss;
}

}  // namespace attnlab::nmt::detail
