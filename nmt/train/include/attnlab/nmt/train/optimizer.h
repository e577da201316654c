#pragma once
// Adam over a model's parameters with the paper's learning-rate schedule.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab::nmt {

// lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)   (paper, eq. 3); step >= 1.
double transformer_lr(std::int64_t step, std::int64_t d_model, std::int64_t warmup_steps, double scale = 1.0);

struct AdamSettings {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double eps = 1e-9;
};

class AdamOptimizer {
 public:
  using Named = std::vector<std::pair<std::string, Tensor>>;
  AdamOptimizer(Named parameters, AdamSettings settings);

  // One update with learning rate lr from each parameter's grad(); parameters without a gradient
  // are left as they are (their moments too).
  void step(double lr);
  void zero_grad();
  std::int64_t steps() const { return steps_; }

  // Moments by parameter name, for checkpoints.
  const Named& first_moments() const { return m_; }
  const Named& second_moments() const { return v_; }
  // Restores the state; names and shapes must match the parameters (else an Error naming the
  // first mismatch, with nothing changed).
  void load_state(const Named& m, const Named& v, std::int64_t steps);

 private:
  Named params_, m_, v_;
  AdamSettings settings_;
  std::int64_t steps_ = 0;
};

}  // namespace attnlab::nmt
