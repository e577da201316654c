#include "training_state.h"

#include <utility>
#include <vector>

#include "attnlab/autograd.h"
#include "attnlab/nmt/train/trainer.h"
#include "attnlab/ops.h"

namespace attnlab::nmt::detail {

TrainingState::TrainingState(const ExperimentConfig& config, const Registry& registry, const PreparedData& data,
                             const Device& device)
    : model_config(trained_model_config(config, data.vocab.size())),
      training_(config.training),
      device_(device),
      init_(init_seed(config)),
      dropout_rng_(dropout_seed(config)),
      model_(model_config, registry, init_, dropout_rng_, compute_dtype(config), device),
      optimizer_(model_.named_parameters(),
                 {config.training.adam_beta1, config.training.adam_beta2, config.training.adam_eps}),
      batches_(data.train, training_batching(config)) {}

StepTotals TrainingState::step_once() {
  const TrainingConfig& tc = training_;
  std::vector<BatchTensors> group;
  StepTotals totals;
  for (std::int64_t i = 0; i < tc.accumulate; ++i) {
    group.push_back(batches_.next_tensors());
    totals.tokens += group.back().tgt_tokens;
  }
  for (const BatchTensors& b : group) {
    // logits [B*T, V] against the shifted targets [B*T]
    Tensor logits = model_.forward(b.src.to(device_), b.tgt_in.to(device_)).reshape({-1, model_config.vocab_size});
    auto ce = cross_entropy(logits, b.tgt_out.reshape({-1}).to(device_), tc.label_smoothing, kPadId);
    // The step's loss is the mean over every target token of the accumulated batches.
    scale(ce.loss_sum, 1.0 / static_cast<double>(totals.tokens)).backward();
    totals.loss_sum += ce.loss_sum.item();
  }
  ++step_;
  totals.lr = transformer_lr(step_, model_config.dims.d_model, tc.warmup_steps, tc.lr_scale);
  optimizer_.step(totals.lr);
  optimizer_.zero_grad();
  return totals;
}

void TrainingState::restore(const Checkpoint& ck) {
  apply_to_module(ck, model_);
  std::vector<std::pair<std::string, Tensor>> m, v;
  for (const auto& t : ck.optimizer.m) m.emplace_back(t.name, t.tensor);
  for (const auto& t : ck.optimizer.v) v.emplace_back(t.name, t.tensor);
  optimizer_.load_state(m, v, ck.optimizer.step);
  if (auto it = ck.rng.find("dropout"); it != ck.rng.end()) it->second.restore(dropout_rng_);
  batches_.set_position({static_cast<std::uint64_t>(ck.data.epoch), static_cast<std::uint64_t>(ck.data.batch_index)});
  step_ = ck.step;
}

Checkpoint TrainingState::snapshot() {
  Checkpoint ck;
  ck.step = step_;
  ck.parameters = snapshot_parameters(model_);
  ck.optimizer.step = optimizer_.steps();
  for (const auto& [name, t] : optimizer_.first_moments()) ck.optimizer.m.push_back({name, t.to(Device::cpu())});
  for (const auto& [name, t] : optimizer_.second_moments()) ck.optimizer.v.push_back({name, t.to(Device::cpu())});
  ck.rng["dropout"] = GeneratorState::of(dropout_rng_);
  const auto pos = batches_.position();
  ck.data = {static_cast<std::int64_t>(pos.epoch), static_cast<std::int64_t>(pos.index)};
  return ck;
}

}  // namespace attnlab::nmt::detail
