#include "training_state.h"

#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attnlab/autograd.h"
#include "attnlab/bf16_operands.h"
#include "attnlab/nmt/train/trainer.h"
#include "attnlab/ops.h"
#include "attnlab/precision.h"
#include "attnlab/seed_slot.h"
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

AdamSettings adam_settings(const TrainingConfig& tc) {
  return {.beta1 = tc.adam_beta1,
          .beta2 = tc.adam_beta2,
          .eps = tc.adam_eps,
          .weight_decay = decays_weights(tc.optimizer) ? tc.weight_decay : 0.0};
}

std::vector<bool> decay_mask(const TrainingConfig& tc, const NamedTensors& parameters) {
  if (!decays_weights(tc.optimizer) || tc.weight_decay <= 0) return std::vector<bool>(parameters.size(), false);
  return weight_decay_mask(parameters, tc.weight_decay_exclude);
}

LrSchedule schedule_of(const TrainingConfig& tc, std::int64_t d_model) {
  return {.kind = tc.schedule,
          .warmup_steps = tc.warmup_steps,
          .max_steps = tc.max_steps,
          .d_model = d_model,
          .lr_scale = tc.lr_scale,
          .lr = tc.lr,
          .min_lr = tc.min_lr};
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
      decayed_(decay_mask(config.training, model_.named_parameters())),
      optimizer_(model_.named_parameters(), adam_settings(config.training), decayed_),
      schedule_(schedule_of(config.training, model_config.dims.d_model)),
      batches_(data.train, training_batching(config)),
      bf16_operands_(bf16_operands_on(precision_from_name(config.training.precision))),
      bf16_logits_(bf16_logits_on(precision_from_name(config.training.precision)) && config.training.rdrop <= 0) {
  optimizer_.keep_bf16_copies(bf16_operands_);
  // The dropout kernels read each batch's seed from the training device's memory, written when the
  // batch sets the generator's state: the same masks, and the arguments of a step's kernels no
  // longer change from batch to batch (what a replayed CUDA graph needs). On the CPU too, so
  // that every test of training runs this path.
  dropout_rng_.bind_seed_slot(std::make_shared<SeedSlot>(device));
}

// Forward and backward of one batch; returns its summed cross-entropy (detached, f64). The step's
// loss is the mean over every target token of the step's batches (`tokens` of them).
Tensor TrainingState::batch_loss(const BatchTensors& b, double tokens) {
  const Tensor src = b.src.to(device_), tgt_in = b.tgt_in.to(device_);
  const Tensor targets = b.tgt_out.reshape({-1}).to(device_);  // the shifted targets [B*T]
  // [B*T, V], in bf16 where bf16_logits_ (R-Drop's divergence reads f32 logits)
  const auto logits = [&] { return model_.forward(src, tgt_in, bf16_logits_).reshape({-1, model_config.vocab_size}); };
  // The forward's GEMM operands in bf16 made once each, the weights' from the optimizer's copies
  // (bf16 precision); the scope ends before the backward, which frees them as it goes.
  std::optional<Bf16Operands> operands;
  if (bf16_operands_) optimizer_.provide_bf16_copies(operands.emplace());
  if (training_.rdrop <= 0) {
    auto ce = cross_entropy(logits(), targets, training_.label_smoothing, kPadId);
    operands.reset();
    scale(ce.loss_sum, 1.0 / tokens).backward();
    return ce.loss_sum.detach().to(DType::f64);
  }
  // R-Drop: two passes over the batch, the second with the dropout stream where the first left it
  // (other masks). The paper's loss, NLL_a + NLL_b + alpha / 2 (KL(a||b) + KL(b||a)), halved so that
  // its cross-entropy part is on the scale of one pass: the mean of the two passes' label-smoothed
  // cross-entropies plus alpha / 4 times the symmetric divergence of their predictions.
  const Tensor logits_a = logits(), logits_b = logits();
  auto ce_a = cross_entropy(logits_a, targets, training_.label_smoothing, kPadId);
  auto ce_b = cross_entropy(logits_b, targets, training_.label_smoothing, kPadId);
  const Tensor ce = scale(add(ce_a.loss_sum, ce_b.loss_sum), 0.5);
  const Tensor kl = symmetric_kl(logits_a, logits_b, targets, kPadId);
  operands.reset();
  scale(add(ce, scale(kl, training_.rdrop / 4.0)), 1.0 / tokens).backward();
  return ce.detach().to(DType::f64);
}

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
    // Summed in f64 on the device, in batch order: the same sums the host made before.
    const Tensor loss = batch_loss(b, static_cast<double>(totals.tokens));
    totals.loss_sum = totals.loss_sum.defined() ? add(totals.loss_sum, loss) : loss;
  }
  if (comm_.launched()) {  // one rank under mpirun too: its sums go through MPI (or NCCL) as well
    const auto start = Clock::now();
    sum_gradients_over_ranks();
    double loss_sum = totals.loss_sum.defined() ? totals.loss_sum.item() : 0.0;
    comm_.allreduce_sum(std::span<double>(&loss_sum, 1));
    totals.loss_sum = Tensor::full(Shape{}, loss_sum, DType::f64, device_);
    totals.exchange_seconds = seconds_since(start);
  }
  ++step_;
  totals.lr = learning_rate(schedule_, step_);
  Tensor clip_scale;
  if (tc.clip_norm > 0) {
    // Every rank holds the summed gradients, so every rank computes the same norm and factor. Both
    // stay on the device: the optimizer's kernels read the factor there.
    const GradientClip clip = gradient_clip(gradient_squares(model_.named_parameters()), tc.clip_norm);
    totals.grad_norm = clip.norm;
    clip_scale = clip.factor;
  }
  optimizer_.step(totals.lr, 1.0, clip_scale);
  optimizer_.zero_grad();
  return totals;
}

std::vector<std::string> TrainingState::decayed_parameters() const {
  std::vector<std::string> names;
  const auto parameters = model_.named_parameters();
  for (std::size_t i = 0; i < parameters.size(); ++i)
    if (decayed_[i]) names.push_back(parameters[i].first);
  return names;
}

std::string TrainingState::optimizer_line() const {
  const TrainingConfig& tc = training_;
  std::string line = fmt::format("optimizer: {} (betas {}, {}; eps {})", kOptimizers.name(tc.optimizer),
                                 tc.adam_beta1, tc.adam_beta2, tc.adam_eps);
  if (decays_weights(tc.optimizer)) {
    const auto decayed = decayed_parameters();
    line += fmt::format(", weight decay {} on {} of {} parameters (rank >= 2{}; the metrics' start entry names them)",
                        tc.weight_decay, decayed.size(), decayed_.size(),
                        tc.weight_decay_exclude.empty()
                            ? std::string()
                            : fmt::format(", names without {}", fmt::join(tc.weight_decay_exclude, ", ")));
  }
  line += fmt::format("; schedule {}, peak {:.3e} at step {}", kLrScheduleKinds.name(tc.schedule), peak_lr(schedule_),
                      tc.warmup_steps);
  if (decays_to_min_lr(tc.schedule))
    line += fmt::format(" down to {:.3e} at step {}", tc.min_lr, tc.max_steps);
  line += tc.clip_norm > 0 ? fmt::format("; gradient norm clipped to {}", tc.clip_norm) : "; no clipping";
  return line;
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
