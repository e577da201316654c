#include "attnlab/nmt/train/trainer.h"
#include "attnlab/nmt/train/manifest.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include <fmt/core.h>

#include "attnlab/nmt/checkpoint/checkpoint_store.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/dist/communicator.h"
#include "attnlab/nmt/eval/evaluate.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/precision.h"
#include "attnlab/threads.h"
#include "metrics_log.h"
#include "progress.h"
#include "run_folder.h"
#include "training_state.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;
using detail::Clock;
using detail::LogFn;

LogFn make_log(const TrainOptions& options, bool tty) {
  return [&options, tty](const std::string& line) {
    if (options.log) options.log(line);
    else if (options.progress) fmt::print(stderr, "{}{}\n", tty ? "\r\033[K" : "", line);
  };
}

// Continues from the newest readable checkpoint of the run folder, if there is one.
void resume(detail::TrainingState& state, const CheckpointStore& store, const Vocabulary& vocab, TrainResult& result,
            const LogFn& log, Communicator& comm) {
  LatestCheckpoint latest = store.latest();
  // Every rank reads the same folder; they must all continue from one step.
  double steps[2] = {latest ? static_cast<double>(latest.checkpoint->step) : 0.0, 1.0};
  comm.allreduce_sum(steps);
  ATTNLAB_CHECK(steps[0] == steps[1] * (latest ? static_cast<double>(latest.checkpoint->step) : 0.0),
                "the ranks found different checkpoints in {} (this rank: step {}); is the run folder on a file "
                "system every rank sees?",
                store.folder().string(), latest ? latest.checkpoint->step : 0);
  if (!latest) return;
  for (const auto& w : latest.warnings) log("warning: " + w);
  const Checkpoint& ck = *latest.checkpoint;
  ATTNLAB_CHECK(ck.spm_model_hash == vocab.model_hash(),
                "checkpoint {} was trained with another vocabulary (model hash {} vs {})", latest.path.string(),
                ck.spm_model_hash, vocab.model_hash());
  state.restore(ck);
  result.resumed_from = state.step();
  log(fmt::format("resumed from {} (step {})", latest.path.string(), state.step()));
}

std::string model_line(const detail::TrainingState& state, std::int64_t parameters, const Transformer& model,
                       const Device& device, const std::string& precision) {
  const TransformerConfig& mc = state.model_config;
  return fmt::format(
      "model: {} parameters ({} encoder + {} decoder layers, d_model {}, {} heads, d_ff {}; {} / {} / {}) on {}, "
      "precision {}",
      parameters, mc.encoder_layers, mc.decoder_layers, mc.dims.d_model, mc.dims.n_heads, mc.dims.d_ff,
      model.attention().choice.name, mc.positional.name, mc.ffn.name, device.str(), precision);
}

// Dev perplexity, logged and recorded; leaves the model in training mode.
double evaluate_dev(Transformer& model, const EncodedCorpus& dev, const TrainingConfig& tc, const Device& device,
                    std::int64_t step, const LogFn& log, MetricsLog& metrics) {
  const CorpusScores scores = score_corpus(model, dev, tc.batch_tokens, tc.label_smoothing, device);
  const double smoothed = scores.smoothed_loss / static_cast<double>(scores.tokens);
  log(fmt::format("step {} | dev ppl {:.3f} (per wordpiece) | dev loss {:.4f} (label-smoothed) | {} tokens", step,
                  scores.perplexity(), smoothed, scores.tokens));
  metrics.write({{"kind", "dev"}, {"step", step}, {"dev_ppl", scores.perplexity()}, {"dev_nll", scores.nll_per_token()},
                 {"dev_smoothed_loss", smoothed}, {"dev_tokens", scores.tokens}});
  model.train();
  return scores.perplexity();
}

}  // namespace

TransformerConfig trained_model_config(const ExperimentConfig& config, std::int64_t vocab_size) {
  TransformerConfig mc = config.model;
  mc.vocab_size = vocab_size;
  mc.pad_id = kPadId;
  return mc;
}

std::uint64_t init_seed(const ExperimentConfig& config) { return config.seed; }
std::uint64_t dropout_seed(const ExperimentConfig& config) { return config.seed + 0x9E3779B97F4A7C15ull; }

BatchingOptions training_batching(const ExperimentConfig& config) {
  return {.max_tokens = config.training.batch_tokens,
          .seed = config.seed,
          .shuffle = true,
          .pad_to_multiple = config.training.pad_to_multiple};
}

TrainResult train(const ExperimentConfig& config, const Registry& registry, const TrainOptions& options) {
  const auto start = Clock::now();
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const TrainingConfig& tc = config.training;

  // The device first: a missing GPU is reported before the run folder or the data are touched. In
  // a data-parallel CUDA run each rank takes the GPU of its local rank.
  const LaunchInfo launch = detect_launch();
  Device device = Device::parse(config.device);
  if (launch.size > 1 && device.is_cuda()) device = Device::cuda(launch.local_rank);
  check_device_available(device);
  const std::unique_ptr<Communicator> comm = make_communicator(device);
  // Rank 0 owns the run folder: it alone writes config, logs, metrics and checkpoints.
  const bool root = comm->is_root();
  const LogFn log = root ? make_log(options, tty) : LogFn([](const std::string&) {});
  const Precision compute = precision_from_name(tc.precision);
  if (const std::string why = precision_unavailable_reason(compute, device); !why.empty())
    throw Error(fmt::format("training.precision = \"{}\" on {}: {}; train in \"fp32\" there", tc.precision,
                            device.str(), why));
  const PrecisionGuard precision(compute);
  const std::string resolved = to_toml(config, /*include_eval=*/false);
  std::optional<FolderLock> lock;
  if (root) {
    if (!options.run_dir_locked) lock.emplace(FolderLock::acquire(config.run_dir, "run folder"));
    detail::claim_run_dir(config, resolved);
    detail::write_eval_settings(config);
  }
  // threads = 0: the CPUs this process was given (a Slurm task's allocation, its affinity mask),
  // unless OMP_NUM_THREADS says otherwise.
  if (config.threads > 0) set_num_threads(static_cast<int>(config.threads));
  else if (std::getenv("OMP_NUM_THREADS") == nullptr) set_num_threads(allotted_cpus());
  for (const std::string& notice : validate_plugins(config, registry)) log("note: " + notice);

  // Rank 0 first: it trains the vocabulary and fills the cache the others then read.
  if (!root) comm->barrier();
  PreparedData data = prepare_data(config, log);
  if (root) {
    detail::copy_vocabulary(config.run_dir, data.vocab);
    comm->barrier();
  }
  detail::TrainingState state(config, registry, data, device, *comm);
  Transformer& model = state.model();
  CheckpointStore store(config.run_dir, static_cast<int>(tc.keep_checkpoints));
  TrainResult result;
  result.parameters = model.parameter_count();
  resume(state, store, data.vocab, result, log, *comm);
  if (root)  // at every start, after the resume has fixed the step
    write_manifest(config.run_dir, build_manifest(config, resolved, model.attention().choice, registry, data, device,
                                                  state.step()));
  MetricsLog metrics(root ? (fs::path(config.run_dir) / "metrics.jsonl").string() : std::string(), state.step());
  log(model_line(state, result.parameters, model, device, tc.precision));
  if (device.is_cpu() && config.model.expressions.any()) log(prepare_expression_kernels(config.model));
  log(state.optimizer_line());
  if (tc.pad_to_multiple > 0) {
    const ShapeSummary shapes = summarize_shapes(state.batches());
    log(fmt::format("static batch shapes: lengths padded to multiples of {}, rows to the budget: {} shapes over {} "
                    "batches per epoch, {:.1f}% of the batches' tokens padding",
                    tc.pad_to_multiple, shapes.shapes, shapes.batches, 100.0 * (1.0 - shapes.real_share())));
  }
  if (tc.rdrop > 0)
    log(fmt::format("R-Drop: two dropout passes per batch, alpha {} on the symmetric KL divergence of their "
                    "predictions (about twice the work per step)",
                    tc.rdrop));
  if (comm->launched())
    log(fmt::format("data parallel: {}; a step is {} rank{} x {} batch(es) of <= {} tokens per side (effective "
                    "batch <= {} tokens)",
                    comm->describe(), comm->size(), comm->size() == 1 ? "" : "s", tc.accumulate, tc.batch_tokens,
                    comm->size() * tc.accumulate * tc.batch_tokens));
  nlohmann::json start_entry = {
      {"kind", "start"}, {"step", state.step()}, {"parameters", result.parameters}, {"resumed", state.step() > 0}};
  if (decays_weights(tc.optimizer)) start_entry["weight_decay_parameters"] = state.decayed_parameters();
  metrics.write(start_entry);

  SavePolicy policy(tc.checkpoint_every, tc.checkpoint_every_seconds);
  const std::string plugins = detail::plugins_json(config, model.attention().choice, registry);
  std::int64_t last_saved = state.step();
  const auto save = [&] {
    if (!root) return;
    Checkpoint ck = state.snapshot();
    ck.config = resolved;
    ck.plugins = plugins;
    ck.spm_model_hash = data.vocab.model_hash();
    result.last_checkpoint = store.save(state.step(), ck).string();
    policy.mark_saved(state.step());
    last_saved = state.step();
    metrics.write({{"kind", "checkpoint"}, {"step", state.step()}, {"path", result.last_checkpoint}});
  };

  detail::DevTracker dev(metrics.dev_history());
  clear_stop_request();
  detail::Progress progress(tc, state.step(), start, root && tty && options.progress && !options.log, log, metrics,
                            comm->size());
  model.train();
  // The training loop: one optimizer step, then what is due after it. The ranks stop together:
  // a signal or the time limit on any rank stops all of them before the same step.
  const std::int64_t pause = options.pause_at_step;
  while (state.step() < tc.max_steps) {
    if (pause > 0 && state.step() >= pause) {  // at the rung already (a restarted process)
      result.paused = true;
      break;
    }
    double stop[2] = {stop_requested() ? 1.0 : 0.0,
                      tc.max_seconds > 0 && detail::seconds_since(start) >= tc.max_seconds ? 1.0 : 0.0};
    comm->allreduce_sum(stop);
    if (stop[0] > 0 || stop[1] > 0) {
      result.interrupted = stop[0] > 0;
      break;
    }
    const detail::StepTotals totals = state.step_once();
    const std::int64_t step = state.step();
    if (auto loss = progress.after_step(step, totals)) result.train_loss = *loss;
    if (data.dev && (step % tc.eval_every == 0 || step == tc.max_steps)) {
      // Rank 0 evaluates; its early-stopping decision is every rank's.
      if (root) {
        result.dev_ppl = evaluate_dev(model, *data.dev, tc, device, step, log, metrics);
        dev.record(*result.dev_ppl);
      }
      if (comm->any(tc.early_stopping > 0 && dev.evals_without_gain() >= tc.early_stopping)) {
        log(fmt::format("early stopping: no dev improvement in {} evaluations", dev.evals_without_gain()));
        result.early_stopped = true;
        save();
        break;
      }
    }
    if (policy.should_save(step) || step == tc.max_steps) save();
    if (options.stop_after_step > 0 && step >= options.stop_after_step) {
      result.interrupted = true;
      break;
    }
  }
  if (state.step() != last_saved && !options.stop_after_step) save();
  if (result.interrupted && options.stop_after_step == 0)
    log(fmt::format("interrupted at step {}; run the same command again to resume", state.step()));
  result.steps = state.step();
  result.best_dev_ppl = dev.best();
  result.seconds = detail::seconds_since(start);
  result.tokens_per_second = static_cast<double>(progress.total_tokens()) / std::max(result.seconds, 1e-9);
  if (comm->size() > 1 && state.step() > result.resumed_from)
    log(fmt::format("data parallel over {} ranks: {:.0f} target tokens/s in total, {:.0f} per rank; scaling "
                    "efficiency {:.1f}% (the share of step time outside the gradient exchange)",
                    comm->size(), result.tokens_per_second, result.tokens_per_second / comm->size(),
                    100.0 * progress.compute_share()));
  return result;
}

}  // namespace attnlab::nmt
