#pragma once
// Backend kernels of cross_entropy.cpp. logits [N, V] floating, targets [N] i32/i64, same device.
#include <cstdint>
#include <string>

#include "attnlab/tensor.h"

namespace attnlab::detail {

// What a target must be, as the out-of-range error says it (on the CPU and, through an index
// check, on CUDA): "for V = 3 (targets must be in [0, 3) or equal ignore_index = -100)".
std::string cross_entropy_target_rule(std::int64_t vocab, std::int64_t ignore_index);
// Throws an Error naming the first target that is neither ignore_index nor in [0, V), its
// position and V. Returns the number of kept (not ignored) targets.
std::int64_t cross_entropy_check_targets_cpu(const Tensor& targets, std::int64_t vocab,
                                             std::int64_t ignore_index);
// The same with the count in `tokens`, a [] i64 tensor on the targets' device. On CUDA the
// targets are checked and counted on the device, without a wait: a bad one is thrown, with the
// CPU's message, at the host's next wait for the device (index_check.h).
void cross_entropy_check_targets_cpu(const Tensor& targets, std::int64_t vocab, std::int64_t ignore_index,
                                     Tensor& tokens);
void cross_entropy_check_targets_cuda(const Tensor& targets, std::int64_t vocab, std::int64_t ignore_index,
                                      Tensor& tokens);
// Targets already checked. logits f32, f64 or bf16 (computed in f32). lse [N] (logits dtype, f32
// for bf16) receives log sum_k exp(logits[n, k]) for kept rows; loss_sum (one element, lse's
// dtype) receives sum over kept rows of
//   lse_n - (1 - eps) * logits[n, y_n] - (eps / V) * sum_k logits[n, k],
// summed in row order so that it does not depend on the thread count.
void cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets, double eps,
                               std::int64_t ignore_index, Tensor& lse, Tensor& loss_sum);
// dlogits[n, k] = g * (exp(logits[n, k] - lse_n) - q_nk) with q_n = (1 - eps) onehot(y_n) + eps / V
// for kept rows, 0 for ignored rows (dlogits in the logits' dtype: bf16 rounds the f32 values
// once).
// g: the incoming gradient of loss_sum, one element of lse's dtype on the logits' device (read
// there: the CUDA backward does not wait for it).
void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& targets, const Tensor& lse, double eps,
                                std::int64_t ignore_index, const Tensor& g, Tensor& dlogits);

// The same on a CUDA device (cross_entropy_cuda.cu).
void cross_entropy_forward_cuda(const Tensor& logits, const Tensor& targets, double eps,
                                std::int64_t ignore_index, Tensor& lse, Tensor& loss_sum);
void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets, const Tensor& lse, double eps,
                                 std::int64_t ignore_index, const Tensor& g, Tensor& dlogits);

}  // namespace attnlab::detail
