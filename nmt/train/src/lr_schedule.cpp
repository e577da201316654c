#include "attnlab/nmt/train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "attnlab/error.h"
#include "attnlab/nmt/train/optimizer.h"

namespace attnlab::nmt {

double peak_lr(const LrSchedule& s) {
  ATTNLAB_CHECK(s.d_model > 0 && s.warmup_steps > 0, "learning rate: d_model {} and warmup_steps {} must be > 0",
                s.d_model, s.warmup_steps);
  if (s.lr > 0) return s.lr;
  return s.lr_scale / std::sqrt(static_cast<double>(s.d_model) * static_cast<double>(s.warmup_steps));
}

double learning_rate(const LrSchedule& s, std::int64_t step) {
  ATTNLAB_CHECK(step >= 1 && s.warmup_steps >= 1, "learning rate ({}): step {} and warmup_steps {} must be >= 1",
                kLrScheduleKinds.name(s.kind), step, s.warmup_steps);
  if (s.kind == LrScheduleKind::inverse_sqrt && s.lr <= 0)
    return transformer_lr(step, s.d_model, s.warmup_steps, s.lr_scale);
  const double peak = peak_lr(s);
  const double t = static_cast<double>(step), w = static_cast<double>(s.warmup_steps);
  if (s.kind == LrScheduleKind::inverse_sqrt) return peak * std::min(t / w, std::sqrt(w / t));
  if (step <= s.warmup_steps) return peak * t / w;
  if (!decays_to_min_lr(s.kind)) return peak;  // constant
  // The share of the decay done: 0 at the end of warm-up, 1 at max_steps and after.
  const double span = static_cast<double>(std::max<std::int64_t>(s.max_steps - s.warmup_steps, 1));
  const double done = std::min((t - w) / span, 1.0);
  const double fall = s.kind == LrScheduleKind::cosine ? 0.5 * (1.0 + std::cos(std::numbers::pi * done)) : 1.0 - done;
  return s.min_lr + (peak - s.min_lr) * fall;
}

}  // namespace attnlab::nmt
