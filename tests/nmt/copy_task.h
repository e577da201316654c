#pragma once
// A tiny Transformer trained on a copy task, for comparing devices and precisions: the same
// initial weights (drawn on the host), the same batches (a fixed-seed generator) and the same
// schedule whatever the device and precision, so two runs differ only by their arithmetic (or by
// the attention and positional plugins, when those are changed).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attnlab/device.h"
#include "attnlab/nmt/model/model_config.h"
#include "attnlab/plugin/options.h"
#include "attnlab/precision.h"

namespace attnlab::nmt::testing {

struct CopyTaskRun {
  Device device = Device::cpu();
  Precision precision = Precision::fp32;
  std::int64_t steps = 100;
  std::int64_t batch = 32;  // sentences per batch
  std::int64_t len = 6;     // tokens per source sentence (the target adds EOS)
  std::int64_t heads = 4;   // of d_model 32: d_k = d_v = 32 / heads (flash on CUDA takes 16 and up)
  double dropout = 0.0;
  double label_smoothing = 0.1;
  std::int64_t warmup_steps = 100;
  std::uint64_t init_seed = 11;     // initial weights
  std::uint64_t dropout_seed = 12;  // dropout masks
  std::uint64_t data_seed = 5;      // the batches
  std::string attention = "scaled_dot";
  std::string positional = "sinusoidal";
  std::map<std::string, OptionValue> positional_options{};
};

// The model `run` trains (on run.device, built in f32 whatever run.precision).
TransformerConfig copy_task_config(const CopyTaskRun& run);

// The mean (label-smoothed) loss per target token of every step, in order.
std::vector<double> train_copy_task(const CopyTaskRun& run);

// The loss curves of `run` as it is and with attention plugin `attention` instead, for
// comparing two attention plugins on one task (both curves have run.steps entries).
struct AttentionCurves {
  std::vector<double> reference, other;
};
AttentionCurves train_copy_task_twice(CopyTaskRun run, const std::string& attention);

// The same run, with each step's token accuracy beside its loss: the share of target tokens whose
// highest logit (before that step's update) is the right token.
struct CopyTaskCurves {
  std::vector<double> loss;
  std::vector<double> accuracy;
};
CopyTaskCurves train_copy_task_curves(const CopyTaskRun& run);

// `run` with seed number `seed`: 0 keeps its seeds, n > 0 sets each of them to 1000 + n.
CopyTaskRun with_seed(CopyTaskRun run, int seed);

// The loss curve of `run` averaged step by step over seeds first_seed .. first_seed + seeds - 1.
std::vector<double> mean_loss_curve(const CopyTaskRun& run, int first_seed, int seeds);

// How many times a test of what training reaches repeats its measurement, each time with new
// seeds: once, or $ATTNLAB_TRAINING_REPEATS times where set (tools/training_spread.sh measures the
// spread of what the tests bound that way).
int training_repeats();

// The mean of values[begin, end).
double mean_of(const std::vector<double>& values, std::size_t begin, std::size_t end);

// Checks (doctest) that `got` follows `reference` as two runs of one model in different arithmetic
// should: as many steps, the first step's loss within 1 % (the same weights; only the rounding
// differs), and every window of 10 steps within 0.1 nats plus 10 % of the reference's loss (the
// margin the CPU's own bf16 run needs against its fp32 run).
void check_loss_curve_follows(const std::vector<double>& reference, const std::vector<double>& got);

}  // namespace attnlab::nmt::testing
