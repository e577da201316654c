#pragma once
// The symmetric Kullback-Leibler divergence between two predictions of the same tokens, the
// consistency term of R-Drop (Liang et al. 2021: two dropout passes over one batch).
//   logits_a, logits_b  [N, V] floating, one dtype and device; targets [N] i32/i64.
// With p = softmax(logits_a) and r = softmax(logits_b) per row, the result is
//   sum over rows n with targets[n] != ignore_index of KL(p_n || r_n) + KL(r_n || p_n)
//     = sum_k (p_nk - r_nk) (log p_nk - log r_nk),
// a scalar of the logits' dtype, differentiable with respect to both (the targets only choose
// the rows). With D = log p - log r and the expectations E_p[D], E_r[D] of a row:
//   d / d logits_a = p (D - E_p[D]) + p - r,   d / d logits_b = r (E_r[D] - D) + r - p.
//
// On the CPU one fused kernel reads each pair of rows twice (their maxima and sums of
// exponentials, then the divergence) and keeps for the backward only the logits it was given
// and [N, 4] row statistics. On other devices it is composed of softmax, log_softmax, sub, mul
// and sum (their own kernels), which materializes [N, V] intermediates.
#include <cstdint>

#include "attnlab/tensor.h"

namespace attnlab {

Tensor symmetric_kl(const Tensor& logits_a, const Tensor& logits_b, const Tensor& targets,
                    std::int64_t ignore_index = -1);

}  // namespace attnlab
