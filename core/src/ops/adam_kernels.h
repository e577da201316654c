#pragma once
// Backend kernels of adam.cpp. Each entry's param, grad, m and v share shape, dtype and device.
#include <cmath>
#include <span>

#include "attnlab/ops/adam.h"
#include "ops/adam_scalars.h"

namespace attnlab::detail {

// The scalars every kernel of one step uses. A grad_scale_tensor on the CPU is read here; one on
// CUDA is passed by address for the kernel to read.
inline AdamStepScalars adam_step_scalars(const AdamHyper& h) {
  const double t = static_cast<double>(h.step);
  const double c2 = std::sqrt(1.0 - std::pow(h.beta2, t));
  AdamStepScalars s{.a = h.lr * c2 / (1.0 - std::pow(h.beta1, t)),
                    .eps_hat = h.eps * c2,
                    .beta1 = h.beta1,
                    .beta2 = h.beta2,
                    .decay = 1.0 - h.lr * h.weight_decay,
                    .grad_scale = h.grad_scale};
  if (h.grad_scale_tensor.defined()) {
    if (h.grad_scale_tensor.device().is_cuda()) s.grad_scale_by = h.grad_scale_tensor.data<double>();
    else s.grad_scale *= *h.grad_scale_tensor.data<double>();
  }
  return s;
}

void adam_update_cpu(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& hyper);
// One fused kernel per step (adam_cuda.cu).
void adam_update_cuda(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& hyper);

// Every entry at once, all on one device and of one dtype: the CPU in one parallel loop over the
// elements of all entries, with adam_update_cpu's arithmetic; CUDA in one launch per batch of
// entries (adam_multi_plan.h), with adam_update_cuda's. bf16_copies as adam_step_multi's (checked).
void adam_update_multi_cpu(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> m,
                           std::span<const Tensor> v, const AdamHyper& hyper, std::span<const Tensor> bf16_copies);
void adam_update_multi_cuda(std::span<const Tensor> params, std::span<const Tensor> grads,
                            std::span<const Tensor> m, std::span<const Tensor> v, const AdamHyper& hyper,
                            std::span<const Tensor> bf16_copies);

}  // namespace attnlab::detail
