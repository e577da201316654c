#pragma once
// Gradient clipping by the global L2 norm, computed where the gradients are. On CUDA one thread of
// one kernel turns the gradients' summed squares into the norm and the clipping factor, and the
// factor reaches Adam as a tensor (AdamHyper::grad_scale_tensor), so that a training step that
// clips does not wait for the device.
#include "attnlab/tensor.h"

namespace attnlab {

struct GradientClip {
  Tensor norm;    // [] f64: sqrt(squares)
  Tensor factor;  // [] f64: min(1, max_norm / (norm + 1e-6)), as PyTorch's clip_grad_norm_
};

// squares: a [] f64 tensor, the gradients' summed squares (>= 0); max_norm finite and > 0. Both
// results are on squares' device. Outside the tape. A norm that is not finite (a gradient
// overflowed, or the training diverged) is an Error: on the CPU thrown here; on CUDA recorded by
// the kernel and thrown at the host's next wait for the device (index_check.h), with the factor
// NaN meanwhile, so that the step it scales leaves NaN parameters rather than plausible ones.
GradientClip gradient_clip(const Tensor& squares, double max_norm);

}  // namespace attnlab
