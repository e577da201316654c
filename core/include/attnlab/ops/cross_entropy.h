#pragma once
// Token-level cross-entropy with label smoothing and ignored (padding) targets.
//   logits  [N, V] floating; targets [N] i32/i64 in [0, V) or == ignore_index.
// bf16 logits (matmul's bf16_out) are read as f32 and computed in f32, as their f32 widening
// would be; the loss is f32, and the logits' gradient is bf16, each value the f32 gradient
// rounded once (what a bf16 GEMM's backward would cast it to).
// With smoothing eps the target distribution is q = (1 - eps) * onehot(y) + eps / V, and the
// loss of a token is -sum_k q_k log softmax(logits)_k (eps = 0: the ordinary negative
// log-likelihood). Ignored tokens contribute nothing and receive zero gradient.
//
// Memory: no pass materializes the [N, V] probabilities. The forward reads each row twice (its
// maximum, then the sums of exp(x - max) and of x) and keeps for the backward the logits it was
// given (a reference, not a copy), the targets and lse [N], the log-sum-exp of each row; its only
// scratch is [N] row losses in f64, added in a fixed order. The backward recomputes
// p = exp(x - lse) element by element straight into the logits' gradient, the one [N, V] tensor it
// allocates. The targets are checked and counted where they are: on CUDA by a kernel, without a
// wait for the device, and a bad target is thrown at the host's next wait for it (a download such
// as item(), or synchronize()).
#include <cstdint>

#include "attnlab/tensor.h"

namespace attnlab {

struct CrossEntropyResult {
  Tensor loss_sum;  // shape [] in the logits' dtype (f32 for bf16), differentiable w.r.t. logits
  Tensor tokens;    // shape [] i64 on the logits' device: the number of targets that were not ignored
};

CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets,
                                 double label_smoothing = 0.0, std::int64_t ignore_index = -1);

}  // namespace attnlab
