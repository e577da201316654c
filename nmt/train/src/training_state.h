#pragma once
// Internal to the trainer: everything a checkpoint saves and restores (the model, Adam's moments,
// the dropout stream, the position in the shuffled batches, the step), and the training step that
// moves it forward.
#include <cstdint>
#include <string>

#include "attnlab/device.h"
#include "attnlab/nmt/checkpoint/checkpoint.h"
#include "attnlab/nmt/dist/communicator.h"
#include "attnlab/nmt/data/batching.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/nmt/train/lr_schedule.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/random.h"
#include "attnlab/tensor.h"

namespace attnlab::nmt::detail {

// What one optimizer step consumed.
struct StepTotals {
  // The label-smoothed loss summed over the step's target tokens: an f64 scalar on the training
  // device, left there so that the step does not wait for the device (Progress reads it when it
  // logs). Undefined when this rank computed no batch of the step.
  Tensor loss_sum;
  std::int64_t tokens = 0;    // target tokens of the accumulated batches
  double lr = 0.0;            // the learning rate the step was taken with
  // With clipping on: the gradients' global L2 norm before clipping, an f64 scalar on the training
  // device like loss_sum (Progress reads it when it logs; the step was clipped where
  // clip_factor(norm, clip_norm) < 1). Undefined without clipping.
  Tensor grad_norm;
  double exchange_seconds = 0.0;  // spent summing over the ranks (0 in a single process)
};

// Built exactly as trained_model_config, init_seed, dropout_seed and training_batching describe
// (trainer.h). Not copyable: the model holds its dropout generator by reference.
//
// Data parallel over the ranks of `comm`: one optimizer step takes accumulate * ranks batches of
// the one batch sequence every rank walks; rank r computes batches r*accumulate .. (r+1)*accumulate-1
// of them, and the gradients are summed over the ranks before the update. Each batch's dropout
// stream depends only on (seed, step, batch of the step), so N ranks draw the masks one process
// with accumulate * N draws: the two trainings are the same.
class TrainingState {
 public:
  TrainingState(const ExperimentConfig& config, const Registry& registry, const PreparedData& data,
                const Device& device, Communicator& comm);
  TrainingState(const TrainingState&) = delete;
  TrainingState& operator=(const TrainingState&) = delete;

  // Forward and backward over this rank's batches of the step (the loss is the mean over the target
  // tokens of all the step's batches, on every rank), the gradients summed over the ranks (and
  // clipped to clip_norm when set), then one Adam or AdamW step at the schedule's rate for the new
  // step number. The totals are the whole step's.
  StepTotals step_once();

  // Model, moments, dropout stream, batch position and step from a checkpoint of this run.
  void restore(const Checkpoint& checkpoint);
  // A checkpoint of the state now; the caller adds config, plugins and vocabulary hash.
  Checkpoint snapshot();

  const TransformerConfig model_config;
  Transformer& model() { return model_; }
  // The parameters AdamW decays (empty for Adam), for the run's metrics.
  std::vector<std::string> decayed_parameters() const;
  // One line for the run log: optimizer, schedule with its peak, clipping, and what AdamW decays.
  std::string optimizer_line() const;
  std::int64_t step() const { return step_; }
  // The batches of an epoch (in length order), for the run log.
  const std::vector<Batch>& batches() const { return batches_.batches(); }

 private:
  // Forward and backward of one batch (two passes and their divergence with R-Drop), the loss
  // divided by the step's `tokens`; returns the batch's summed cross-entropy, detached, in f64.
  Tensor batch_loss(const BatchTensors& batch, double tokens);
  // Sums the gradients of every parameter over the ranks (a parameter without one gets zeros).
  void sum_gradients_over_ranks();

  const TrainingConfig& training_;
  Device device_;
  Communicator& comm_;
  std::uint64_t dropout_seed_;
  Generator init_, dropout_rng_;
  Transformer model_;
  std::vector<bool> decayed_;
  AdamOptimizer optimizer_;
  LrSchedule schedule_;
  BatchIterator batches_;
  // bf16 precision: the forward's GEMM operands through a Bf16Operands scope, the weights' from the
  // optimizer's copies (off with ATTNLAB_NO_BF16_OPERANDS=1, for comparison).
  bool bf16_operands_;
  bool bf16_logits_;  // the logits in bf16 (bf16_logits_on), without R-Drop
  std::int64_t step_ = 0;
};

}  // namespace attnlab::nmt::detail
