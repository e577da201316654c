#pragma once
// Pointwise activations; any shape, floating dtypes.
#include "attnlab/tensor.h"

namespace attnlab {

// max(0, x); the gradient at exactly 0 is taken as 0.
Tensor relu(const Tensor& x);
// x * Phi(x) with the exact Gaussian CDF Phi(x) = (1 + erf(x / sqrt 2)) / 2.
Tensor gelu(const Tensor& x);
// The hyperbolic tangent, (e^x - e^-x) / (e^x + e^-x).
Tensor tanh(const Tensor& x);
// x * sigmoid(x) (SiLU / swish-1), with a sigmoid that does not overflow for large |x|.
Tensor silu(const Tensor& x);

}  // namespace attnlab
