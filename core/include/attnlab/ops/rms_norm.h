#pragma once
// RMS normalization over the last axis (Zhang & Sennrich 2019): layer normalization without
// centring,
//   y = x / sqrt(mean(x^2) + eps) * gamma + beta.
// x [..., D]; gamma, beta [D] or undefined (then 1 and 0; RMSNorm as published has no beta).
#include "attnlab/tensor.h"

namespace attnlab {

Tensor rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta = Tensor(), double eps = 1e-6);

}  // namespace attnlab
