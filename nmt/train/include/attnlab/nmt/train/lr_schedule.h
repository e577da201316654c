#pragma once
// Learning-rate schedules, chosen in [training] by `schedule`:
//   "inverse_sqrt" (the paper, eq. 3): linear warm-up, then the inverse square root of the step;
//   "cosine":   linear warm-up, then a half cosine from the peak down to min_lr at max_steps;
//   "linear":   linear warm-up, then a straight line from the peak down to min_lr at max_steps;
//   "constant": linear warm-up, then the peak.
// The peak, reached at step warmup_steps, is `lr` when set (> 0), else the paper's
// lr_scale * d_model^-0.5 * warmup_steps^-0.5, so that one lr_scale means the same peak under
// every schedule. Each is a function of the step alone: a resumed run continues it exactly.
#include <cstdint>

#include "attnlab/nmt/experiment/training_choices.h"

namespace attnlab::nmt {

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::inverse_sqrt;
  std::int64_t warmup_steps = 4000;
  std::int64_t max_steps = 100000;  // where "cosine" and "linear" reach min_lr
  std::int64_t d_model = 512;
  double lr_scale = 1.0;
  double lr = 0.0;  // the peak; 0: the paper's, from d_model, warmup_steps and lr_scale
  double min_lr = 0.0;
};

// The rate at step warmup_steps: lr when > 0, else lr_scale * d_model^-0.5 * warmup_steps^-0.5.
double peak_lr(const LrSchedule& schedule);

// The learning rate of optimizer step `step` (1-based); "inverse_sqrt" without `lr` is exactly
// transformer_lr (optimizer.h). Throws an Error naming the schedule for a step < 1 or
// warmup_steps < 1. After max_steps, "cosine" and "linear" stay at min_lr.
double learning_rate(const LrSchedule& schedule, std::int64_t step);

}  // namespace attnlab::nmt
