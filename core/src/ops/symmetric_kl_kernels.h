#pragma once
// The fused CPU kernels of symmetric_kl.cpp. logits_a, logits_b [N, V] (f32 or f64), targets [N]
// i32/i64, on the CPU; the targets are not range-checked (they only select rows).
#include <cstdint>

#include "attnlab/tensor.h"

namespace attnlab::detail {

// stats [N, 4] (logits dtype) receives per kept row lse_a, lse_b, E_p[D], E_r[D] (zeros for
// ignored rows); loss_sum (one element) receives sum over kept rows of E_p[D] - E_r[D], which is
// sum_k (p_k - r_k) D_k, added in row order (the same for every thread count).
void symmetric_kl_forward_cpu(const Tensor& logits_a, const Tensor& logits_b, const Tensor& targets,
                              std::int64_t ignore_index, Tensor& stats, Tensor& loss_sum);
// da, db [N, V]: g times the gradients of the header (zeros for ignored rows); g one element.
void symmetric_kl_backward_cpu(const Tensor& logits_a, const Tensor& logits_b, const Tensor& targets,
                               std::int64_t ignore_index, const Tensor& stats, const Tensor& g, Tensor& da,
                               Tensor& db);

// Any device: the same sum from softmax, log_softmax, sub, mul and sum (their kernels), the kept
// rows chosen by a 0/1 row mask (index_mask, made where the targets are); differentiable through
// those ops. It is the path of every device but the CPU, and the CPU kernels' second reference
// in the tests.
Tensor symmetric_kl_composed(const Tensor& logits_a, const Tensor& logits_b, const Tensor& targets,
                             std::int64_t ignore_index);

}  // namespace attnlab::detail
