#pragma once
// Backend kernels of activation.cpp. All tensors share shape, dtype and device.
#include "attnlab/tensor.h"

namespace attnlab::detail {

void relu_forward_cpu(const Tensor& x, Tensor& y);
// dx = dy * [x > 0]
void relu_backward_cpu(const Tensor& x, const Tensor& dy, Tensor& dx);
void gelu_forward_cpu(const Tensor& x, Tensor& y);
// dx = dy * (Phi(x) + x * phi(x))
void gelu_backward_cpu(const Tensor& x, const Tensor& dy, Tensor& dx);

}  // namespace attnlab::detail
