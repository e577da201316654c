#pragma once
// Bias + dropout + residual + layer norm in one op, the post-norm sub-layer LayerNorm(a r + Dropout(x))
// (a = residual_scale: 1 in the paper's block, DeepNorm's alpha in its):
//   s = a * residual + dropout(x + bias, p, seed, offset)
//   y = layer_norm(s, gamma, beta, eps)    (rms_norm(s, gamma, beta, eps) when not centered)
// x, residual [..., D] (same shape, dtype and device); bias, gamma, beta [D] or undefined (bias 0,
// gamma 1, beta 0). The dropout mask is the one dropout(x + bias, p, seed, offset) draws (Philox,
// element i of x kept when philox_uniform(seed, offset, i) >= p), on every device and thread count,
// so the op equals that composition of the unfused ops (with scale(residual, a) for a != 1): on
// the CPU the output and the gradients of x, residual, gamma and beta bit for bit (the bias
// gradient is summed in double there).
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
  double residual_scale = 1.0;  // a: finite; the residual is scaled before the add
  bool centered = true;         // false: the norm is RMSNorm's (rms_norm.h: no mean), else layer_norm's
};

// p in [0, 1) (p == 0: no dropout), eps finite and >= 0. Throws an Error naming the op and the
// offending shapes or values.
Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, std::uint64_t seed,
                              std::uint64_t offset, double eps = 1e-5);
// The seed by value or read from a slot on x's device when the kernels run (forward and backward).
Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, philox::SeedRef seed,
                              std::uint64_t offset, double eps = 1e-5);
// Draws (seed, offset) from `generator` exactly as dropout(x, p, generator) does: it advances by
// x's size, even for p == 0, and only after every input has been checked. With a seed slot bound on
// x's device, the kernels read the seed there.
Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, Generator& generator,
                              double eps = 1e-5);

// The pre-norm step: the residual add of one block and the norm that the next sub-layer reads, in
// one pass. sum = s above (the residual stream, which goes on) and normed = y (the next
// sub-layer's input): equal to the composition to the bit on the CPU, forward and backward
// (gradients flow into both outputs). Memory: s is an output; the backward keeps the row
// statistics as the op above does.
struct DropoutAddNormPair {
  Tensor sum;     // [..., D]: a * residual + dropout(x + bias)
  Tensor normed;  // [..., D]: layer_norm(sum) (rms_norm when not centered)
};
DropoutAddNormPair dropout_add_norm_pair(const DropoutAddLayerNormInputs& in, double p, std::uint64_t seed,
                                         std::uint64_t offset, double eps = 1e-5);
DropoutAddNormPair dropout_add_norm_pair(const DropoutAddLayerNormInputs& in, double p, philox::SeedRef seed,
                                         std::uint64_t offset, double eps = 1e-5);
DropoutAddNormPair dropout_add_norm_pair(const DropoutAddLayerNormInputs& in, double p, Generator& generator,
                                         double eps = 1e-5);

}  // namespace attnlab
