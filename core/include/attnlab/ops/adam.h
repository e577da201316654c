#pragma once
// One Adam step (Kingma & Ba 2015) on a parameter, in place and outside the tape, with AdamW's
// decoupled weight decay (Loshchilov & Hutter 2019) and a gradient scale (for norm clipping):
//   g <- grad_scale * grad    (grad_scale times grad_scale_tensor's value, where that is set)
//   m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
//   p <- (1 - lr * weight_decay) p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
// With weight_decay 0 and grad_scale 1 (the defaults) this is plain Adam, bit for bit.
// param, grad, m, v: same shape, dtype and device (floating).
#include <cstdint>
#include <span>

#include "attnlab/tensor.h"

namespace attnlab {

struct AdamHyper {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.98;
  double eps = 1e-9;
  std::int64_t step = 1;  // t, 1-based, for the bias corrections
  double weight_decay = 0.0;  // decoupled (AdamW); >= 0, and lr * weight_decay < 1
  double grad_scale = 1.0;    // multiplies the gradient first; > 0 and finite
  // Where defined, a [] f64 tensor on the parameters' device whose value multiplies grad_scale (in
  // f64, before rounding to the element type): clipping's factor (gradient_clip.h), read by the
  // kernels where it is, so that a CUDA step does not wait for the device. Its value must be
  // finite and > 0 as grad_scale; on the CPU that is checked, on CUDA the value is used as it is.
  Tensor grad_scale_tensor;
};

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& hyper);

// The same step on many tensors at once: for every i, what adam_step(params[i], grads[i], m[i],
// v[i], hyper) does (bit for bit on the CPU), with params, m and v updated in place. The lists have
// one length; entry i's four tensors share one shape (entries may differ, and may be empty); every
// tensor is on one device and of one floating dtype, and no two params share storage. The CPU runs
// one parallel loop over all elements, CUDA one kernel launch per batch of tensors. Every entry is
// checked before anything changes.
// bf16_copies, where not empty, has one entry per param: undefined, or a bf16 tensor of an f32
// param's shape on its device that receives bf16(param) as updated (round to nearest even, the
// bits of cast(param, bf16)), written by the same pass: the bf16 operand of the next forward's
// GEMMs (attnlab/bf16_operands.h) without a cast.
void adam_step_multi(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> m,
                     std::span<const Tensor> v, const AdamHyper& hyper,
                     std::span<const Tensor> bf16_copies = {});

}  // namespace attnlab
