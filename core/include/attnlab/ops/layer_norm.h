#pragma once
// Layer normalization over the last axis (Ba et al. 2016):
//   y = (x - mean) / sqrt(var + eps) * gamma + beta, var the biased variance.
// x [..., D]; gamma, beta [D] or undefined (then 1 and 0).
#include "attnlab/tensor.h"

namespace attnlab {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);

}  // namespace attnlab
