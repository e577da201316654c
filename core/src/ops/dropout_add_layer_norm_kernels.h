#pragma once
// Backend kernels of dropout_add_layer_norm.cpp. x, residual, sum, y, dy and the gradients of
// shape [rows, D]; bias, gamma, beta and their gradients [D] or undefined; mean, rstd [rows]; all
// one dtype and device.
#include <cstdint>

#include "attnlab/ops/dropout_add_layer_norm.h"

namespace attnlab::detail {

// Element i of x is kept when philox_uniform(seed, offset, i) >= p and then scaled by 1 / (1 - p);
// p == 0 keeps every element (scale 1). A seed in a slot is read when the kernels run.
struct DropoutMask {
  double p = 0.0;
  philox::SeedRef seed;
  std::uint64_t offset = 0;
};

// The gradients the backward writes; each is undefined when not wanted. ds (the gradient of s,
// which is also the residual's) must be defined when dx is, dx when dbias is. ds_extra, when
// defined, is a gradient that reaches s directly (dropout_add_norm_pair's sum output): ds is the
// norm's backward plus ds_extra, and dx and dbias follow from that total.
struct DropoutAddLayerNormGrads {
  Tensor ds, dx, dbias, dgamma, dbeta;
  Tensor ds_extra;
};

// sum = residual * a + (keep ? (x + bias) * scale : 0) with a = in.residual_scale, computed as
// scale, dropout then add would; then
// y, mean and rstd exactly as layer_norm_forward_cpu on sum (centred or not, as in.centered). sum
// may be y itself (no backward).
void dropout_add_layer_norm_forward_cpu(const DropoutAddLayerNormInputs& in, const DropoutMask& mask,
                                        double eps, Tensor& sum, Tensor& y, Tensor& mean, Tensor& rstd);
// ds as layer_norm_backward_cpu's dx on sum; dx = keep ? ds * scale : 0; dbias = column sums of dx;
// dgamma, dbeta as layer_norm_backward_cpu. Column sums in row order (thread-count independent).
void dropout_add_layer_norm_backward_cpu(const Tensor& sum, const Tensor& gamma, const Tensor& mean,
                                         const Tensor& rstd, const Tensor& dy, const DropoutMask& mask,
                                         bool centered, DropoutAddLayerNormGrads& grads);

// The same on a CUDA device (dropout_add_layer_norm_cuda.cu): the mask is bit-identical to the CPU's;
// the row statistics are block reductions and the column sums go by chunks of rows, as in
// layer_norm_cuda.cu, so values may differ from the CPU in the last bits.
void dropout_add_layer_norm_forward_cuda(const DropoutAddLayerNormInputs& in, const DropoutMask& mask,
                                         double eps, Tensor& sum, Tensor& y, Tensor& mean, Tensor& rstd);
void dropout_add_layer_norm_backward_cuda(const Tensor& sum, const Tensor& gamma, const Tensor& mean,
                                          const Tensor& rstd, const Tensor& dy, const DropoutMask& mask,
                                          bool centered, DropoutAddLayerNormGrads& grads);

}  // namespace attnlab::detail
