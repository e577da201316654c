#pragma once
// The dropout family: how activations are dropped at each dropout site during training.
#include "attnlab/module.h"

namespace attnlab {

class Dropout : public Module {
 public:
  // Identity in evaluation mode or at rate 0; otherwise drops with the module's rate.
  virtual Tensor forward(const Tensor& x) = 0;
  virtual double rate() const = 0;
};

}  // namespace attnlab
