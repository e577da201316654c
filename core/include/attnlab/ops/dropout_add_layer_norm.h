#pragma once
// Bias + dropout + residual + layer norm in one op, the post-norm sub-layer LayerNorm(r + Dropout(x)):
//   s = residual + dropout(x + bias, p, seed, offset)
//   y = layer_norm(s, gamma, beta, eps)
// x, residual [..., D] (same shape, dtype and device); bias, gamma, beta [D] or undefined (bias 0,
// gamma 1, beta 0). The dropout mask is the one dropout(x + bias, p, seed, offset) draws (Philox,
// element i of x kept when philox_uniform(seed, offset, i) >= p), on every device and thread count,
// so the op equals that composition of the unfused ops: on the CPU the output and the gradients
// of x, residual, gamma and beta bit for bit (the bias gradient is summed in double there).
//
// Memory: the forward saves s [..., D] and the per-row mean and 1/std; the backward regenerates
// the mask from (seed, offset) instead of storing it, and differentiates x, bias, residual, gamma
// and beta. Dtypes f32 and f64, on the CPU and on CUDA.
#include <cstdint>

#include "attnlab/random.h"
#include "attnlab/tensor.h"

namespace attnlab {

struct DropoutAddLayerNormInputs {
  Tensor x;         // [..., D]: the branch that is dropped (a sub-layer's output)
  Tensor bias;      // [D] added to x before the dropout, or undefined
  Tensor residual;  // x's shape: added after the dropout
  Tensor gamma;     // [D] or undefined
  Tensor beta;      // [D] or undefined
};

// p in [0, 1) (p == 0: no dropout), eps finite and >= 0. Throws an Error naming the op and the
// offending shapes or values.
Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, std::uint64_t seed,
                              std::uint64_t offset, double eps = 1e-5);
// Draws (seed, offset) from `generator` exactly as dropout(x, p, generator) does: it advances by
// x's size, even for p == 0, and only after every input has been checked.
Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, Generator& generator,
                              double eps = 1e-5);

}  // namespace attnlab
