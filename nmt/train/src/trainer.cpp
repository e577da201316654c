#include "attnlab/nmt/trainer.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <unistd.h>

#include "attnlab/autograd.h"
#include "attnlab/build_info.h"
#include "attnlab/nmt/atomic_file.h"
#include "attnlab/nmt/batching.h"
#include "attnlab/nmt/checkpoint_store.h"
#include "attnlab/nmt/evaluate.h"
#include "attnlab/nmt/optimizer.h"
#include "attnlab/nmt/prepared_data.h"
#include "attnlab/nmt/transformer.h"
#include "attnlab/ops.h"
#include "attnlab/precision.h"
#include "attnlab/threads.h"
#include "metrics_log.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) { g_stop.store(true); }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string duration_str(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto total = static_cast<std::int64_t>(s + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, total % 3600 / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

// A run folder belongs to one configuration: refuse to continue a run of another one.
void claim_run_dir(const ExperimentConfig& config, const std::string& resolved) {
  fs::create_directories(config.run_dir);
  const fs::path path = fs::path(config.run_dir) / "config.toml";
  if (fs::exists(path)) {
    std::ifstream in(path);
    std::stringstream existing;
    existing << in.rdbuf();
    ATTNLAB_CHECK(existing.str() == resolved,
                  "run folder {} holds a run of another configuration ({} differs from {}); choose another "
                  "run_dir or remove the folder",
                  config.run_dir, path.string(), config.source_file);
    return;
  }
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << resolved;
  }
  fs::rename(tmp, path);
}

// The plugins that built the model (the attention plugin that serves it: the named one or its fallback).
std::string plugins_json(const ExperimentConfig& c, const PluginChoice& attention, const Registry& registry) {
  nlohmann::json list = nlohmann::json::array();
  auto add = [&](PluginFamily family, const PluginChoice& choice) {
    const PluginInfo& info = registry.find(family, choice.name);
    list.push_back({{"family", std::string(family_name(family))}, {"name", info.name}, {"version", info.version},
                    {"source", info.source}, {"build_id", core_build_id()}});
  };
  add(PluginFamily::attention, attention);
  add(PluginFamily::positional, c.model.positional);
  add(PluginFamily::ffn, c.model.ffn);
  add(PluginFamily::dropout, c.model.dropout_plugin);
  return list.dump();
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
  return {.max_tokens = config.training.batch_tokens, .seed = config.seed, .shuffle = true};
}

void request_stop() { g_stop.store(true); }

void install_stop_signal_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

TrainResult train(const ExperimentConfig& config, const Registry& registry, const TrainOptions& options) {
  const auto start = Clock::now();
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
    else if (options.progress) fmt::print(stderr, "{}{}\n", tty ? "\r\033[K" : "", line);
  };
  const TrainingConfig& tc = config.training;
  // The device first: a missing GPU is reported before the run folder or the data are touched.
  const Device device = Device::parse(config.device);
  check_device_available(device);
  const PrecisionGuard precision(precision_from_name(tc.precision));
  const std::string resolved = to_toml(config, /*include_eval=*/false);
  claim_run_dir(config, resolved);
  const std::string eval_settings = eval_to_toml(config.eval);
  write_file_atomically(fs::path(config.run_dir) / kRunEvalFile,
                        std::as_bytes(std::span<const char>(eval_settings.data(), eval_settings.size())));
  if (config.threads > 0) set_num_threads(static_cast<int>(config.threads));
  for (const std::string& notice : validate_plugins(config, registry)) log("note: " + notice);

  PreparedData data = prepare_data(config, log);
  // The run folder carries its vocabulary, so translate/eval need nothing from the cache.
  const fs::path vocab_copy = fs::path(config.run_dir) / "vocab.model";
  if (!fs::exists(vocab_copy)) {
    std::ifstream in(data.vocab.model_path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_file_atomically(vocab_copy, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  }
  const TransformerConfig mc = trained_model_config(config, data.vocab.size());
  Generator init(init_seed(config)), dropout_rng(dropout_seed(config));
  Transformer model(mc, registry, init, dropout_rng, compute_dtype(config), device);
  AdamOptimizer optimizer(model.named_parameters(), {tc.adam_beta1, tc.adam_beta2, tc.adam_eps});
  BatchIterator batches(data.train, training_batching(config));
  CheckpointStore store(config.run_dir, static_cast<int>(tc.keep_checkpoints));

  TrainResult result;
  result.parameters = model.parameter_count();
  std::int64_t step = 0;
  if (LatestCheckpoint latest = store.latest()) {
    for (const auto& w : latest.warnings) log("warning: " + w);
    const Checkpoint& ck = *latest.checkpoint;
    ATTNLAB_CHECK(ck.spm_model_hash == data.vocab.model_hash(),
                  "checkpoint {} was trained with another vocabulary (model hash {} vs {})", latest.path.string(),
                  ck.spm_model_hash, data.vocab.model_hash());
    apply_to_module(ck, model);
    std::vector<std::pair<std::string, Tensor>> m, v;
    for (const auto& t : ck.optimizer.m) m.emplace_back(t.name, t.tensor);
    for (const auto& t : ck.optimizer.v) v.emplace_back(t.name, t.tensor);
    optimizer.load_state(m, v, ck.optimizer.step);
    if (auto it = ck.rng.find("dropout"); it != ck.rng.end()) it->second.restore(dropout_rng);
    batches.set_position({static_cast<std::uint64_t>(ck.data.epoch), static_cast<std::uint64_t>(ck.data.batch_index)});
    step = ck.step;
    result.resumed_from = step;
    log(fmt::format("resumed from {} (step {})", latest.path.string(), step));
  }
  MetricsLog metrics((fs::path(config.run_dir) / "metrics.jsonl").string(), step);
  log(fmt::format("model: {} parameters ({} encoder + {} decoder layers, d_model {}, {} heads, d_ff {}; {} / {} / {}) "
                  "on {}, precision {}",
                  result.parameters, mc.encoder_layers, mc.decoder_layers, mc.dims.d_model, mc.dims.n_heads,
                  mc.dims.d_ff, model.attention().choice.name, mc.positional.name, mc.ffn.name, device.str(),
                  tc.precision));
  metrics.write({{"kind", "start"}, {"step", step}, {"parameters", result.parameters}, {"resumed", step > 0}});

  SavePolicy policy(tc.checkpoint_every, tc.checkpoint_every_seconds);
  const std::string plugins = plugins_json(config, model.attention().choice, registry);
  std::int64_t last_saved = step;
  auto save = [&] {
    Checkpoint ck;
    ck.step = step;
    ck.parameters = snapshot_parameters(model);
    ck.optimizer.step = optimizer.steps();
    for (const auto& [name, t] : optimizer.first_moments()) ck.optimizer.m.push_back({name, t.to(Device::cpu())});
    for (const auto& [name, t] : optimizer.second_moments()) ck.optimizer.v.push_back({name, t.to(Device::cpu())});
    ck.rng["dropout"] = GeneratorState::of(dropout_rng);
    const auto pos = batches.position();
    ck.data = {static_cast<std::int64_t>(pos.epoch), static_cast<std::int64_t>(pos.index)};
    ck.config = resolved;
    ck.plugins = plugins;
    ck.spm_model_hash = data.vocab.model_hash();
    result.last_checkpoint = store.save(step, ck).string();
    policy.mark_saved(step);
    last_saved = step;
    metrics.write({{"kind", "checkpoint"}, {"step", step}, {"path", result.last_checkpoint}});
  };

  const std::int64_t vocab = mc.vocab_size;
  const std::int64_t first_step = step;
  double window_loss = 0.0, window_tokens = 0.0, window_start = 0.0;
  std::int64_t total_tokens = 0;
  std::optional<double> best;
  std::int64_t evals_without_gain = 0;
  for (double ppl : metrics.dev_history()) {
    if (!best || ppl < *best) best = ppl, evals_without_gain = 0;
    else ++evals_without_gain;
  }
  g_stop.store(false);
  auto last_status = Clock::now();
  model.train();
  while (step < tc.max_steps) {
    if (g_stop.load() || (tc.max_seconds > 0 && seconds_since(start) >= tc.max_seconds)) {
      result.interrupted = g_stop.load();
      break;
    }
    std::vector<BatchTensors> group;
    std::int64_t group_tokens = 0;
    for (std::int64_t i = 0; i < tc.accumulate; ++i) {
      group.push_back(batches.next_tensors());
      group_tokens += group.back().tgt_tokens;
    }
    for (const BatchTensors& b : group) {
      Tensor logits = model.forward(b.src.to(device), b.tgt_in.to(device)).reshape({-1, vocab});
      auto ce = cross_entropy(logits, b.tgt_out.reshape({-1}).to(device), tc.label_smoothing, kPadId);
      // The step's loss is the mean over every target token of the accumulated batches.
      scale(ce.loss_sum, 1.0 / static_cast<double>(group_tokens)).backward();
      window_loss += ce.loss_sum.item();
    }
    window_tokens += static_cast<double>(group_tokens);
    total_tokens += group_tokens;
    ++step;
    const double lr = transformer_lr(step, mc.dims.d_model, tc.warmup_steps, tc.lr_scale);
    optimizer.step(lr);
    optimizer.zero_grad();

    if (tty && options.progress && !options.log && seconds_since(last_status) > 0.2) {
      // A live status line between the permanent log lines.
      const double elapsed = seconds_since(start);
      const double per_step = elapsed / static_cast<double>(step - first_step);
      const int width = 30;
      const auto filled = static_cast<int>(width * static_cast<double>(step) / static_cast<double>(tc.max_steps));
      fmt::print(stderr, "\r\033[K[{}{}] {}/{} | loss {:.4f} | {:.0f} tok/s | ETA {}", std::string(filled, '#'),
                 std::string(width - filled, '.'), step, tc.max_steps,
                 window_loss / std::max(window_tokens, 1.0), static_cast<double>(total_tokens) / std::max(elapsed, 1e-9),
                 duration_str(per_step * static_cast<double>(tc.max_steps - step)));
      last_status = Clock::now();
    }
    if (step % tc.log_every == 0 || step == tc.max_steps) {
      const double elapsed = seconds_since(start);
      const double rate = static_cast<double>(total_tokens) / std::max(elapsed, 1e-9);
      const double per_step = elapsed / static_cast<double>(step - first_step);
      result.train_loss = window_loss / std::max(window_tokens, 1.0);
      log(fmt::format("step {}/{} | loss {:.4f} | lr {:.3e} | {:.0f} tok/s | {} elapsed | ETA {}", step,
                      tc.max_steps, result.train_loss, lr, rate, duration_str(elapsed),
                      duration_str(per_step * static_cast<double>(tc.max_steps - step))));
      metrics.write({{"kind", "train"}, {"step", step}, {"loss", result.train_loss}, {"lr", lr},
                     {"tokens_per_second", rate}, {"elapsed", elapsed}, {"window_seconds", elapsed - window_start}});
      window_loss = window_tokens = 0.0;
      window_start = elapsed;
    }
    if (data.dev && (step % tc.eval_every == 0 || step == tc.max_steps)) {
      const CorpusScores dev = score_corpus(model, *data.dev, tc.batch_tokens, tc.label_smoothing, device);
      result.dev_ppl = dev.perplexity();
      log(fmt::format("step {} | dev ppl {:.3f} (per wordpiece) | dev loss {:.4f} (label-smoothed) | {} tokens", step,
                      dev.perplexity(), dev.smoothed_loss / static_cast<double>(dev.tokens), dev.tokens));
      metrics.write({{"kind", "dev"}, {"step", step}, {"dev_ppl", dev.perplexity()}, {"dev_nll", dev.nll_per_token()},
                     {"dev_smoothed_loss", dev.smoothed_loss / static_cast<double>(dev.tokens)},
                     {"dev_tokens", dev.tokens}});
      if (!best || dev.perplexity() < *best) best = dev.perplexity(), evals_without_gain = 0;
      else ++evals_without_gain;
      model.train();
      if (tc.early_stopping > 0 && evals_without_gain >= tc.early_stopping) {
        log(fmt::format("early stopping: no dev improvement in {} evaluations", evals_without_gain));
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
  if (step != last_saved && !options.stop_after_step) save();
  if (result.interrupted && options.stop_after_step == 0)
    log(fmt::format("interrupted at step {}; run the same command again to resume", step));
  result.steps = step;
  result.best_dev_ppl = best;
  result.seconds = seconds_since(start);
  result.tokens_per_second = static_cast<double>(total_tokens) / std::max(result.seconds, 1e-9);
  return result;
}

}  // namespace attnlab::nmt
