// attnlab data batches EXPERIMENT.toml --steps N --out DIR: what attnlab train would train on in
// its first N steps, written out for another implementation to train on the same (the PyTorch
// training comparison, tools/pytorch_reference_train.py):
//
//   DIR/batches.safetensors  src.K, tgt_in.K, tgt_out.K (int64 [B, T]) for the K-th batch, in the
//                            trainer's order (N x accumulate batches)
//   DIR/init.safetensors     the model's weights as the trainer initialises them
//   DIR/recipe.json          the model and training settings those need (sizes, dropout, label
//                            smoothing, the learning-rate schedule, Adam)
//   DIR/vocab.model          the SentencePiece model the ids belong to
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "attnlab/commands.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/checkpoint/safetensors.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/nmt/train/trainer.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/random.h"

namespace attnlab::app {

namespace fs = std::filesystem;

int data_batches(const std::string& file, std::int64_t steps, const std::string& out);

Command data_batches_command(CLI::App& data) {
  struct Flags {
    std::string file, out;
    std::int64_t steps = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* app = data.add_subcommand(
      "batches", "the first N steps' batches, initial weights and recipe of a run, for training the same in another "
                 "implementation (tools/pytorch_reference_train.py)");
  app->add_option("EXPERIMENT", f->file, "the experiment's TOML file")->required();
  app->add_option("--steps", f->steps, "how many steps")->required()->check(whole_number(1))->type_name("N");
  app->add_option("--out", f->out, "the folder to write")->required()->type_name("DIR");
  return {app, [f] { return data_batches(f->file, f->steps, f->out); }};
}

int data_batches(const std::string& file, std::int64_t steps, const std::string& out) {
  const nmt::ExperimentConfig config = nmt::load_experiment(file);
  const Registry& registry = load_plugins(config.plugin_paths);
  for (const std::string& notice : nmt::validate_plugins(config, registry)) fmt::print(stderr, "note: {}\n", notice);
  const nmt::PreparedData data = nmt::prepare_data(config, [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
  fs::create_directories(out);

  const nmt::TransformerConfig mc = nmt::trained_model_config(config, data.vocab.size());
  Generator init(nmt::init_seed(config)), dropout(nmt::dropout_seed(config));
  nmt::Transformer model(mc, registry, init, dropout, DType::f32, Device::cpu());
  std::vector<nmt::NamedTensor> weights;
  for (const auto& [name, p] : model.named_parameters()) weights.push_back({name, p.to(Device::cpu())});
  nmt::write_safetensors(fs::path(out) / "init.safetensors", weights, {});

  nmt::BatchIterator batches(data.train, nmt::training_batching(config));
  const std::int64_t count = steps * config.training.accumulate;
  std::vector<nmt::NamedTensor> tensors;
  for (std::int64_t k = 0; k < count; ++k) {
    nmt::BatchTensors b = batches.next_tensors();
    tensors.push_back({fmt::format("src.{}", k), b.src});
    tensors.push_back({fmt::format("tgt_in.{}", k), b.tgt_in});
    tensors.push_back({fmt::format("tgt_out.{}", k), b.tgt_out});
  }
  nmt::write_safetensors(fs::path(out) / "batches.safetensors", tensors, {});
  fs::copy_file(data.vocab.model_path(), fs::path(out) / "vocab.model", fs::copy_options::overwrite_existing);

  const auto& t = config.training;
  // The parameters AdamW decays, by the trainer's rule.
  std::vector<std::string> decayed;
  if (nmt::decays_weights(t.optimizer) && t.weight_decay > 0) {
    const auto params = model.named_parameters();
    const std::vector<bool> mask = nmt::weight_decay_mask(params, t.weight_decay_exclude);
    for (std::size_t i = 0; i < params.size(); ++i)
      if (mask[i]) decayed.push_back(params[i].first);
  }
  const nlohmann::json recipe{
      {"experiment", config.name},
      {"steps", steps},
      {"accumulate", t.accumulate},
      {"vocab_size", mc.vocab_size},
      {"pad_id", mc.pad_id},
      {"encoder_layers", mc.encoder_layers},
      {"decoder_layers", mc.decoder_layers},
      {"d_model", mc.dims.d_model},
      {"heads", mc.dims.n_heads},
      {"d_k", mc.dims.d_k},
      {"d_v", mc.dims.d_v},
      {"d_ff", mc.dims.d_ff},
      {"max_length", mc.dims.max_length},
      {"dropout", mc.dropout.residual},
      {"embedding_dropout", mc.dropout.embedding},
      {"attention_dropout", mc.dropout.attention},
      {"ffn_dropout", mc.dropout.ffn},
      {"layer_norm_eps", mc.layer_norm_eps},
      {"plugins", {mc.attention.name, mc.positional.name, mc.ffn.name, mc.dropout_plugin.name, mc.norm.name}},
      {"norm_position", nmt::kNormPositions.name(mc.norm_position)},
      {"label_smoothing", t.label_smoothing},
      {"rdrop", t.rdrop},
      {"warmup_steps", t.warmup_steps},
      {"lr_scale", t.lr_scale},
      {"schedule", nmt::kLrScheduleKinds.name(t.schedule)},
      {"lr", t.lr},
      {"min_lr", t.min_lr},
      {"max_steps", t.max_steps},
      {"optimizer", nmt::kOptimizers.name(t.optimizer)},
      {"weight_decay", t.weight_decay},
      {"weight_decay_parameters", decayed},
      {"clip_norm", t.clip_norm},
      {"adam", {t.adam_beta1, t.adam_beta2, t.adam_eps}}};
  std::ofstream(fs::path(out) / "recipe.json") << recipe.dump(2) << "\n";
  fmt::print("wrote {} batches ({} steps), the initial weights and the recipe of {} to {}\n", count, steps,
             config.name, out);
  return 0;
}

}  // namespace attnlab::app
