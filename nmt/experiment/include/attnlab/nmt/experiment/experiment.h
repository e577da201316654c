#pragma once
// One experiment: data, vocabulary, model and training settings, read from TOML.
//
//   [experiment] name, seed, device, threads, plugin_paths, run_dir
//   [data]       train_source/train_target, dev_source/dev_target (paths relative to the file),
//                or [data.synthetic] train_pairs, dev_pairs, test_pairs, seed; max_length,
//                max_length_ratio, cache_dir
//   [vocab]      size, model_type
//   [model]      encoder_layers, decoder_layers, d_model, heads, d_k, d_v, d_ff, max_length,
//                dropout, embedding_dropout, attention_dropout, ffn_dropout, layer_norm_eps,
//                fused_kernels, norm_position
//   [model.attention] / [model.positional] / [model.ffn] / [model.dropout_plugin] / [model.norm]:
//                name + options;
//                [model.attention] also takes `fallback`, the attention plugin for rows the named
//                one cannot serve, and score expressions: score_mod, mask_mod, [.tensors.<name>]
//                and per-site [.encoder] / [.decoder] / [.cross] (docs/score-expressions.md)
//   [training]   batch_tokens, accumulate, max_steps, max_seconds, warmup_steps, lr_scale,
//                schedule, lr, min_lr, optimizer, weight_decay, weight_decay_exclude, clip_norm,
//                adam_beta1, adam_beta2, adam_eps, label_smoothing, rdrop, eval_every,
//                checkpoint_every, checkpoint_every_seconds, keep_checkpoints, early_stopping,
//                precision, pad_to_multiple
//   [eval]       beam, alpha, max_length_offset, batch_tokens, bleu, lowercase, average_last
// docs/experiments.md documents every key with its default.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "attnlab/nmt/experiment/training_choices.h"
#include "attnlab/nmt/model/model_config.h"

namespace attnlab::nmt {

struct SyntheticData {
  std::int64_t train_pairs = 20000;
  std::int64_t dev_pairs = 500;
  std::int64_t test_pairs = 500;
  std::uint64_t seed = 1;
};

struct DataConfig {
  std::string train_source, train_target, dev_source, dev_target, test_source, test_target;
  bool synthetic = false;
  SyntheticData synth;
  std::int64_t max_length = 100;      // pieces per side; longer training pairs are dropped
  double max_length_ratio = 0.0;      // 0: no ratio filter
  std::string cache_dir;              // SentencePiece models and encoded corpora
};

struct VocabConfig {
  std::int64_t size = 8000;
  std::string model_type = "bpe";
};

struct TrainingConfig {
  std::int64_t batch_tokens = 25000;  // source and target tokens per step, each (padding included)
  std::int64_t accumulate = 1;        // batches per optimizer step (emulates more GPUs)
  // > 0: static batch shapes (nmt/data/batching.h): lengths padded to multiples of this, rows up to
  // the budget, so that an epoch has few distinct [B, S, T]; 0: each batch as long as its pairs.
  std::int64_t pad_to_multiple = 0;
  std::int64_t max_steps = 100000;
  double max_seconds = 0.0;           // 0: no time budget
  std::int64_t warmup_steps = 4000;
  double lr_scale = 1.0;              // multiplies d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
  // The learning-rate schedule (nmt/train/lr_schedule.h): inverse_sqrt (the paper), cosine,
  // linear or constant; lr > 0 sets its peak instead of lr_scale; min_lr ends the decays.
  LrScheduleKind schedule = LrScheduleKind::inverse_sqrt;
  double lr = 0.0;
  double min_lr = 0.0;
  // adam (the paper) or adamw: decoupled weight decay on the parameters of rank >= 2 whose
  // names contain none of weight_decay_exclude (never biases and norm gains).
  Optimizer optimizer = Optimizer::adam;
  double weight_decay = 0.0;
  std::vector<std::string> weight_decay_exclude;
  double clip_norm = 0.0;  // the gradients' global L2 norm is clipped to this; 0: off
  double adam_beta1 = 0.9, adam_beta2 = 0.98, adam_eps = 1e-9;
  double label_smoothing = 0.1;
  // R-Drop (Liang et al. 2021): > 0 trains on two dropout passes of every batch with this weight
  // (the paper's alpha) on the symmetric KL divergence of their predictions; 0: off.
  double rdrop = 0.0;
  std::int64_t eval_every = 1000;     // steps between dev evaluations
  std::int64_t checkpoint_every = 1000;
  double checkpoint_every_seconds = 600.0;
  std::int64_t keep_checkpoints = 5;
  std::int64_t early_stopping = 0;    // evaluations without dev improvement before stopping; 0 off
  std::int64_t log_every = 10;
  // Compute precision of the GEMMs in training, evaluation and decoding (attnlab/precision.h):
  // "fp32", "tf32" or "bf16".
  std::string precision = "fp32";
};

// How a trained model is evaluated: beam search settings and the BLEU mode (docs/evaluation.md).
struct EvalConfig {
  std::int64_t beam = 4;
  double alpha = 0.6;
  std::int64_t max_length_offset = 50;
  std::int64_t batch_tokens = 4096;
  std::string bleu = "sacrebleu";  // "sacrebleu" (13a, detokenized), "tokenized", "paper-wmt14"
  bool lowercase = false;
  std::int64_t average_last = 0;   // average the last N checkpoints first (0: none, as Table 3)
};

struct ExperimentConfig {
  std::string name = "experiment";
  std::string source_file;            // the TOML file it came from
  std::uint64_t seed = 1;
  std::string device = "cpu";
  std::int64_t threads = 0;           // 0: keep the default
  std::vector<std::string> plugin_paths;
  std::string run_dir;                // default: runs/<name>
  DataConfig data;
  VocabConfig vocab;
  TransformerConfig model;
  TrainingConfig training;
  EvalConfig eval;
  // The parsed document, kept for error positions when plugin options are validated.
  std::shared_ptr<const toml::table> document;
};

// Reads and validates an experiment file. Errors name file:line:column and the key; unknown keys
// are errors with the valid keys and a suggestion. Plugin options are validated once the plugins
// are known (validate_plugins).
ExperimentConfig load_experiment(const std::string& path);
// The same with the command line's --set KEY=VALUE settings over the file's values
// (toml_edit.h: command_line_settings; errors name the setting).
ExperimentConfig load_experiment(const std::string& path, const std::vector<std::string>& settings);
ExperimentConfig parse_experiment(const std::string& toml_text, const std::string& source_name);
// The same from a parsed document (a suite builds rows this way; nodes keep their source
// positions, so errors point into the suite file). Relative paths resolve against the folder of
// `source_name`.
ExperimentConfig parse_experiment_table(toml::table document, const std::string& source_name);
// TOML text parsed; a syntax error throws attnlab::Error "<source_name>:<line>:<column>: TOML syntax error: ...".
toml::table parse_toml_text(const std::string& text, const std::string& source_name);

// Checks every plugin the model names exists in `registry` and accepts its options, that the
// attention plugin serves the model on the experiment's device in its compute dtype (its
// registered capabilities against d_k, d_v and the masks the Transformer uses) or names a
// fallback that does, and that the fallback exists. Errors name file:line:column of the table,
// the plugin and what is available or supported. Returns one notice per fallback taken
// ("<file:line:column>: model.attention: attention plugin 'flash' does not support ...: using its
// fallback 'scaled_dot'").
std::vector<std::string> validate_plugins(const ExperimentConfig& config, const class Registry& registry);

// The element type the model computes in: f32 (the [training] precision key will choose bf16).
DType compute_dtype(const ExperimentConfig& config);

// The resolved configuration as TOML text (every default filled in). Without the [eval] table it
// is the run's identity: what the trainer stores in config.toml and checkpoints, and what a
// suite hashes (changing only how a row is evaluated does not retrain it).
std::string to_toml(const ExperimentConfig& config, bool include_eval = true);

// The [eval] table alone, as TOML. `attnlab train` keeps it in the run folder as eval.toml (it is
// how the run is evaluated, not what it is, so it is rewritten on every start without touching
// the run's identity), and `attnlab eval` of the run follows it.
std::string eval_to_toml(const EvalConfig& eval);
inline constexpr const char* kRunEvalFile = "eval.toml";
// The evaluation settings kept in a run folder; nullopt when it has none (trained before
// eval.toml existed). A damaged file is an Error naming it.
std::optional<EvalConfig> read_run_eval(const std::string& run_dir);

}  // namespace attnlab::nmt
