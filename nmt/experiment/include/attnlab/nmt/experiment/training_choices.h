#pragma once
// The named choices of [training]: the optimizer and the learning-rate schedule, each one enum
// with one table of names (attnlab/name_table.h).
#include <cstdint>

#include "attnlab/name_table.h"

namespace attnlab::nmt {

// "adam" (the paper) or "adamw": Adam with decoupled weight decay.
enum class Optimizer : std::uint8_t { adam, adamw };

inline constexpr auto kOptimizers = name_table<Optimizer>("optimizer", {{Optimizer::adam, "adam"}, {Optimizer::adamw, "adamw"}});

// Whether the optimizer takes weight_decay (decoupled from the gradient: AdamW).
constexpr bool decays_weights(Optimizer optimizer) { return optimizer == Optimizer::adamw; }

// The learning-rate schedules (nmt/train/lr_schedule.h computes them), the paper's first.
enum class LrScheduleKind : std::uint8_t { inverse_sqrt, cosine, linear, constant };

inline constexpr auto kLrScheduleKinds =
    name_table<LrScheduleKind>("learning-rate schedule", {{LrScheduleKind::inverse_sqrt, "inverse_sqrt"},
                                {LrScheduleKind::cosine, "cosine"},
                                {LrScheduleKind::linear, "linear"},
                                {LrScheduleKind::constant, "constant"}});

// Whether the schedule decays from its peak to min_lr at max_steps (cosine and linear).
constexpr bool decays_to_min_lr(LrScheduleKind kind) {
  return kind == LrScheduleKind::cosine || kind == LrScheduleKind::linear;
}

}  // namespace attnlab::nmt
