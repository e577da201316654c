#pragma once
// Backend kernels of softmax.cpp. Tensors arrive checked: x, y, dy, dx share shape, dtype and
// device; mask is undefined or has x's rank and dtype, each extent 1 or equal to x's.
#include "attnlab/tensor.h"

namespace attnlab::detail {

// Row-wise over the last axis of x: z = x + mask (broadcast), with key j of query i (i the
// index along axis -2) dropped when causal and j > i + (Tk - Tq). y = softmax(z) or
// log_softmax(z); a row with no finite z gives zeros (softmax) or -inf (log_softmax).
void softmax_forward_cpu(const Tensor& x, const Tensor& mask, bool causal, bool log, Tensor& y);
// From the saved output y:
//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy), over the keys with finite y (0 at masked keys).
void softmax_backward_cpu(const Tensor& y, const Tensor& dy, bool log, Tensor& dx);

// The same on a CUDA device (softmax_cuda.cu; x of rank <= 9 when a mask is given).
void softmax_forward_cuda(const Tensor& x, const Tensor& mask, bool causal, bool log, Tensor& y);
void softmax_backward_cuda(const Tensor& y, const Tensor& dy, bool log, Tensor& dx);

}  // namespace attnlab::detail
