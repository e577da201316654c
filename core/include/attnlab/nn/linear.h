#pragma once
// y = x W^T + b with W [out, in] and b [out], the layout of torch.nn.Linear.
#include "attnlab/module.h"
#include "attnlab/random.h"

namespace attnlab::nn {

class Linear : public Module {
 public:
  // Xavier-uniform weight, zero bias (omitted when !bias).
  Linear(std::int64_t in, std::int64_t out, bool bias, Generator& init, DType dtype = DType::f32,
         Device device = Device::cpu());
  // x [..., in] -> [..., out]
  Tensor forward(const Tensor& x) const;
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  std::int64_t in_features() const { return weight_.dim(1); }
  std::int64_t out_features() const { return weight_.dim(0); }

 private:
  Tensor weight_;
  Tensor bias_;
};

}  // namespace attnlab::nn
