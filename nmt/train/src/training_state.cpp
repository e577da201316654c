#include "training_state.h"

#include <unordered_set>
#include <utility>
#include <vector>

#include "attnlab/autograd.h"
#include "attnlab/nmt/train/trainer.h"
#include "attnlab/ops.h"
#include "progress.h"

namespace attnlab::nmt::detail {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The dropout stream of batch `k` of optimizer step `step`: the same on whichever rank computes it.
std::uint64_t batch_dropout_seed(std::uint64_t seed, std::int64_t step, std::int64_t k) {
  return splitmix64(splitmix64(seed ^ static_cast<std::uint64_t>(step)) ^ static_cast<std::uint64_t>(k));
}

}  // namespace

TrainingState::TrainingState(const ExperimentConfig& config, const Registry& registry, const PreparedData& data,
                             const Device& device, Communicator& comm)
    : model_config(trained_model_config(config, data.vocab.size())),
      training_(config.training),
      device_(device),
      comm_(comm),
      dropout_seed_(dropout_seed(config)),
      init_(init_seed(config)),
      dropout_rng_(dropout_seed(config)),
      model_(model_config, registry, init_, dropout_rng_, compute_dtype(config), device),
      optimizer_(model_.named_parameters(),
                 {config.training.adam_beta1, config.training.adam_beta2, config.training.adam_eps}),
      batches_(data.train, training_batching(config)) {}

StepTotals TrainingState::step_once() {
  const TrainingConfig& tc = training_;
  const std::int64_t per_rank = tc.accumulate, ranks = comm_.size();
  // Every rank walks the whole step's batches (so all know its token count) and builds its own.
  std::vector<std::pair<std::int64_t, BatchTensors>> mine;
  StepTotals totals;
  for (std::int64_t k = 0; k < per_rank * ranks; ++k) {
    const Batch& batch = batches_.next();
    totals.tokens += batch.tgt_tokens;
    if (k / per_rank == comm_.rank()) mine.emplace_back(k, make_batch_tensors(batches_.corpus(), batch));
  }
  model_.set_training_step(step_);  // updates done so far: what scheduled plugins follow
  for (const auto& [k, b] : mine) {
    dropout_rng_.set_state(batch_dropout_seed(dropout_seed_, step_ + 1, k), 0);
    // logits [B*T, V] against the shifted targets [B*T]
    Tensor logits = model_.forward(b.src.to(device_), b.tgt_in.to(device_)).reshape({-1, model_config.vocab_size});
    auto ce = cross_entropy(logits, b.tgt_out.reshape({-1}).to(device_), tc.label_smoothing, kPadId);
    // The step's loss is the mean over every target token of the step's batches.
    scale(ce.loss_sum, 1.0 / static_cast<double>(totals.tokens)).backward();
    totals.loss_sum += ce.loss_sum.item();
  }
  if (ranks > 1) {
    const auto start = Clock::now();
    sum_gradients_over_ranks();
    comm_.allreduce_sum(std::span<double>(&totals.loss_sum, 1));
    totals.exchange_seconds = seconds_since(start);
  }
  ++step_;
  totals.lr = transformer_lr(step_, model_config.dims.d_model, tc.warmup_steps, tc.lr_scale);
  optimizer_.step(totals.lr);
  optimizer_.zero_grad();
  return totals;
}

void TrainingState::sum_gradients_over_ranks() {
  std::vector<Tensor> grads;
  std::unordered_set<void*> seen;
  for (auto& [name, p] : model_.named_parameters()) {
    Tensor g = p.grad();
    // Zeros for a parameter this rank's batches did not reach; a copy where two parameters were
    // handed one gradient tensor, so that no memory is summed twice.
    if (!g.defined()) g = Tensor::zeros(p.shape(), p.dtype(), p.device());
    else if (!seen.insert(g.raw_data()).second) g = g.clone();
    seen.insert(g.raw_data());
    p.set_grad(g);
    grads.push_back(g);
  }
  comm_.allreduce_sum(grads);
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
