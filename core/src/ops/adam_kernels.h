#pragma once
// Backend kernels of adam.cpp.
#include "attnlab/ops/adam.h"

namespace attnlab::detail {

void adam_update_cpu(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& hyper);
// One fused kernel per step (adam_cuda.cu).
void adam_update_cuda(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& hyper);

}  // namespace attnlab::detail
