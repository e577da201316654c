#pragma once
// The position-wise feed-forward family.
#include "attnlab/module.h"

namespace attnlab {

class FeedForward : public Module {
 public:
  // x [..., d_model] -> [..., d_model], applied to every position independently.
  virtual Tensor forward(const Tensor& x) = 0;
};

}  // namespace attnlab
