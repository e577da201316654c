#pragma once
// The normalization family: the norm of every residual block (and, with pre-norm, the norm at
// the top of each stack), chosen by [model.norm] name.
#include <optional>

#include "attnlab/module.h"

namespace attnlab {

// What a fused kernel needs to compute a norm as the plugin does: the plugin's forward is
// layer_norm(x, gamma, beta, eps) when centered, rms_norm(x, gamma, beta, eps) when not (gamma,
// beta: its own parameters, or undefined).
struct FusableNorm {
  Tensor gamma, beta;
  double eps = 1e-6;
  bool centered = true;
};

class Norm : public Module {
 public:
  // x [..., d_model] -> the same shape, each position normalized on its own.
  virtual Tensor forward(const Tensor& x) = 0;
  // Set when the model may replace forward by a fused kernel of the core (the conformance kit
  // checks that the two agree); unset: the model always calls forward.
  virtual std::optional<FusableNorm> fusable() const { return std::nullopt; }
};

}  // namespace attnlab
