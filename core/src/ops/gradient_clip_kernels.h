#pragma once
// Backend kernels of gradient_clip.cpp: squares a [] f64 tensor, norm and factor [] f64 tensors
// on its device, written by the kernel.
#include "attnlab/tensor.h"

namespace attnlab::detail {

// The error of a norm that is not finite (without the op's name), on the CPU and from CUDA's check.
inline constexpr const char* kGradientClipNotFinite =
    "the gradients' L2 norm is not finite (inf or NaN): a gradient overflowed or the training diverged";

void gradient_clip_cpu(const Tensor& squares, double max_norm, Tensor& norm, Tensor& factor);
void gradient_clip_cuda(const Tensor& squares, double max_norm, Tensor& norm, Tensor& factor);

}  // namespace attnlab::detail
