#pragma once
// Trains one experiment into its run folder, resuming from the folder's last checkpoint.
//
// <run_dir>/config.toml        the resolved experiment (a run folder belongs to one config)
// <run_dir>/metrics.jsonl      one JSON object per log line, dev evaluation and checkpoint
// <run_dir>/checkpoints/       step-<N>.safetensors, the last keep_checkpoints kept
//
// On the CPU with a fixed seed and thread count, a run interrupted at any point (Ctrl-C, kill -9,
// power loss) and started again ends with exactly the weights of an uninterrupted run.
//
// Launched by mpirun or srun as N ranks, it trains data parallel (dist/communicator.h): rank 0
// owns the run folder, and N ranks with accumulate = A train as one process with accumulate = N * A.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "attnlab/nmt/data/batching.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/model/model_config.h"
#include "attnlab/nmt/train/stop_signals.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::nmt {

struct TrainOptions {
  bool progress = true;            // a progress line on stderr
  // Stop after this step as if interrupted right after it (tests); 0: run to the end.
  std::int64_t stop_after_step = 0;
  // Stop once this step is done, with a checkpoint of it saved (a search's rung): training the
  // same folder again continues exactly as if it had not stopped. 0: train to max_steps.
  std::int64_t pause_at_step = 0;
  // Called with every line the trainer prints (defaults to stderr when progress is on).
  std::function<void(const std::string&)> log;
  // The caller already holds the run folder's lock (FolderLock); otherwise train() takes it and
  // refuses a folder another process is writing.
  bool run_dir_locked = false;
};

struct TrainResult {
  std::int64_t steps = 0;              // optimizer steps done in total
  std::int64_t resumed_from = 0;       // step of the checkpoint the run resumed from (0: fresh)
  double train_loss = 0.0;             // mean label-smoothed loss per target token, last log window
  std::optional<double> dev_ppl;       // last dev perplexity (per wordpiece, no smoothing)
  std::optional<double> best_dev_ppl;
  double seconds = 0.0;                // wall time of this invocation
  double tokens_per_second = 0.0;      // target tokens per second of this invocation
  std::int64_t parameters = 0;
  bool interrupted = false;            // stopped by a signal or stop_after_step
  bool early_stopped = false;
  bool paused = false;                 // stopped at TrainOptions::pause_at_step
  std::string last_checkpoint;
};

TrainResult train(const ExperimentConfig& config, const Registry& registry, const TrainOptions& options = {});

// The pieces of a run that train() builds before its first step, for tools that must see exactly
// what it trains on (attnlab data batches, the PyTorch training comparison):
// the model's configuration for a vocabulary of `vocab_size` pieces,
TransformerConfig trained_model_config(const ExperimentConfig& config, std::int64_t vocab_size);
// the seeds of the weight initialisation and of the dropout stream,
std::uint64_t init_seed(const ExperimentConfig& config);
std::uint64_t dropout_seed(const ExperimentConfig& config);
// and the batching (token budget, shuffle seed) of its training data.
BatchingOptions training_batching(const ExperimentConfig& config);

}  // namespace attnlab::nmt
