#pragma once
// Adam (the paper) and AdamW over a model's parameters, the paper's learning-rate formula (the
// other schedules: lr_schedule.h) and the global gradient norm for clipping.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/bf16_operands.h"
#include "attnlab/tensor.h"

namespace attnlab::nmt {

// lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)   (paper, eq. 3); step >= 1.
double transformer_lr(std::int64_t step, std::int64_t d_model, std::int64_t warmup_steps, double scale = 1.0);

struct AdamSettings {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double eps = 1e-9;
  // AdamW's decoupled weight decay, for the parameters the optimizer is told to decay; 0: Adam.
  double weight_decay = 0.0;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Which parameters AdamW decays: every one of rank >= 2 (the projection matrices and the
// embedding) whose name contains none of `exclude`; never biases and norm gains (rank 1).
std::vector<bool> weight_decay_mask(const NamedTensors& parameters, const std::vector<std::string>& exclude);

// The squares of all parameters' gradients summed (those without one count as zero): a [] f64
// tensor on the first parameter's device, summed there without a wait (gradients on other devices
// are summed on theirs and moved). What gradient_clip (attnlab/ops/gradient_clip.h) takes.
Tensor gradient_squares(const NamedTensors& parameters);

// The L2 norm of all parameters' gradients together, in double: sqrt of gradient_squares, read
// back from the device (one wait).
double gradient_norm(const NamedTensors& parameters);

// The factor that clips a gradient of norm `norm` to at most max_norm, as PyTorch's
// clip_grad_norm_ computes it: min(1, max_norm / (norm + 1e-6)); 1 when max_norm is 0 (off).
double clip_factor(double norm, double max_norm);

class AdamOptimizer {
 public:
  using Named = NamedTensors;
  // decayed[i]: parameter i takes settings.weight_decay (weight_decay_mask); empty: none does.
  AdamOptimizer(Named parameters, AdamSettings settings, std::vector<bool> decayed = {});

  // One update with learning rate lr from each parameter's grad() times grad_scale (clipping);
  // parameters without a gradient are left as they are (their moments too, and no decay). Where
  // grad_scale_tensor is defined ([] f64, gradient_clip's factor), its value multiplies grad_scale,
  // read where the parameters are (AdamHyper::grad_scale_tensor): no wait for the device.
  void step(double lr, double grad_scale = 1.0, const Tensor& grad_scale_tensor = Tensor());
  void zero_grad();
  std::int64_t steps() const { return steps_; }

  // Moments by parameter name, for checkpoints.
  const Named& first_moments() const { return m_; }
  const Named& second_moments() const { return v_; }
  // Restores the state; names and shapes must match the parameters (else an Error naming the
  // first mismatch, with nothing changed).
  void load_state(const Named& m, const Named& v, std::int64_t steps);

  // Under bf16 precision: keep a bf16 copy of each f32 matrix (rank >= 2: the GEMMs' weights and
  // the embedding), written by step() in its update (adam_step_multi's bf16_copies), and hand the
  // copies to a forward's Bf16Operands scope, which then takes them instead of casting the
  // weights. A copy is handed on only once a step has written it, and none after
  // forget_bf16_copies() (to be called when anything but step() changes a parameter) until the
  // next step rewrites it.
  void keep_bf16_copies(bool on);
  void provide_bf16_copies(Bf16Operands& operands) const;
  void forget_bf16_copies();

 private:
  Named params_, m_, v_;
  AdamSettings settings_;
  std::vector<bool> decayed_;
  std::int64_t steps_ = 0;
  std::vector<Tensor> bf16_copies_;  // per parameter: undefined where none is kept
  std::vector<bool> bf16_written_;   // per parameter: the copy holds the parameter's value
};

}  // namespace attnlab::nmt
