#pragma once
// A tiny Transformer trained on a copy task, for comparing devices and precisions: the same
// initial weights (drawn on the host), the same batches (a fixed-seed generator) and the same
// schedule whatever the device and precision, so two runs differ only by their arithmetic.
#include <cstdint>
#include <vector>

#include "attnlab/device.h"
#include "attnlab/precision.h"

namespace attnlab::nmt::testing {

struct CopyTaskRun {
  Device device = Device::cpu();
  Precision precision = Precision::fp32;
  std::int64_t steps = 100;
  std::int64_t batch = 32;  // sentences per batch
  std::int64_t len = 6;     // tokens per source sentence (the target adds EOS)
  double dropout = 0.0;
  double label_smoothing = 0.1;
  std::int64_t warmup_steps = 100;
};

// The mean (label-smoothed) loss per target token of every step, in order.
std::vector<double> train_copy_task(const CopyTaskRun& run);

// The mean of values[begin, end).
double mean_of(const std::vector<double>& values, std::size_t begin, std::size_t end);

// Checks (doctest) that `got` follows `reference` as two runs of one model in different arithmetic
// should: as many steps, the first step's loss within 1 % (the same weights; only the rounding
// differs), and every window of 10 steps within 0.1 nats plus 10 % of the reference's loss (the
// margin the CPU's own bf16 run needs against its fp32 run).
void check_loss_curve_follows(const std::vector<double>& reference, const std::vector<double>& got);

}  // namespace attnlab::nmt::testing
