#pragma once
// Reductions of floating tensors.
#include "attnlab/tensor.h"

namespace attnlab {

// Sum / mean of all elements: a one-element tensor of shape [].
Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);
// Sum / mean along one axis; keepdim keeps it with extent 1.
Tensor sum(const Tensor& x, int axis, bool keepdim = false);
Tensor mean(const Tensor& x, int axis, bool keepdim = false);

}  // namespace attnlab
