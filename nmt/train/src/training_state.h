#pragma once
// Internal to the trainer: everything a checkpoint saves and restores (the model, Adam's moments,
// the dropout stream, the position in the shuffled batches, the step), and the training step that
// moves it forward.
#include <cstdint>
#include <string>

#include "attnlab/device.h"
#include "attnlab/nmt/checkpoint/checkpoint.h"
#include "attnlab/nmt/data/batching.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/random.h"

namespace attnlab::nmt::detail {

// What one optimizer step consumed.
struct StepTotals {
  double loss_sum = 0.0;      // label-smoothed loss summed over the target tokens
  std::int64_t tokens = 0;    // target tokens of the accumulated batches
  double lr = 0.0;            // the learning rate the step was taken with
};

// Built exactly as trained_model_config, init_seed, dropout_seed and training_batching describe
// (trainer.h). Not copyable: the model holds its dropout generator by reference.
class TrainingState {
 public:
  TrainingState(const ExperimentConfig& config, const Registry& registry, const PreparedData& data,
                const Device& device);
  TrainingState(const TrainingState&) = delete;
  TrainingState& operator=(const TrainingState&) = delete;

  // Forward and backward over `accumulate` batches (the loss is the mean over all their target
  // tokens), then one Adam step at the schedule's rate for the new step number.
  StepTotals step_once();

  // Model, moments, dropout stream, batch position and step from a checkpoint of this run.
  void restore(const Checkpoint& checkpoint);
  // A checkpoint of the state now; the caller adds config, plugins and vocabulary hash.
  Checkpoint snapshot();

  const TransformerConfig model_config;
  Transformer& model() { return model_; }
  std::int64_t step() const { return step_; }

 private:
  const TrainingConfig& training_;
  Device device_;
  Generator init_, dropout_rng_;
  Transformer model_;
  AdamOptimizer optimizer_;
  BatchIterator batches_;
  std::int64_t step_ = 0;
};

}  // namespace attnlab::nmt::detail
