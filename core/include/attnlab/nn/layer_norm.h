#pragma once
// Layer normalization over the last axis with a learned gain (ones) and bias (zeros).
#include "attnlab/module.h"

namespace attnlab::nn {

class LayerNorm : public Module {
 public:
  LayerNorm(std::int64_t features, double eps, DType dtype = DType::f32, Device device = Device::cpu());
  // x [..., features] -> same shape
  Tensor forward(const Tensor& x) const;
  const Tensor& weight() const { return gamma_; }  // [features]
  const Tensor& bias() const { return beta_; }     // [features]
  double eps() const { return eps_; }

 private:
  double eps_;
  Tensor gamma_;
  Tensor beta_;
};

}  // namespace attnlab::nn
