#pragma once
// The scalars of one Adam step, shared by the CPU and CUDA kernels (plain types: nvcc reads this
// header; adam_step_scalars, in ops/adam_kernels.h, computes them from an AdamHyper).
// Folding the bias corrections into the step size and epsilon keeps one division per element:
//   lr * m_hat / (sqrt(v_hat) + eps) = a * m / (sqrt(v) + eps_hat),
//   a = lr sqrt(1 - b2^t) / (1 - b1^t),  eps_hat = eps sqrt(1 - b2^t).
namespace attnlab::detail {

struct AdamStepScalars {
  double a = 0.0, eps_hat = 0.0, beta1 = 0.0, beta2 = 0.0;
  double decay = 1.0;       // 1 - lr * weight_decay (exactly 1 for Adam)
  double grad_scale = 1.0;  // exactly 1 without clipping
  // CUDA: where set, the device value (AdamHyper::grad_scale_tensor) multiplies grad_scale, read
  // by the kernel. The CPU folds that value into grad_scale instead (adam_step_scalars).
  const double* grad_scale_by = nullptr;
};

}  // namespace attnlab::detail
