#pragma once
// Softmax and log-softmax along the last axis, with masking for attention.
//   x:    [..., Tq, Tk] scores (any rank >= 1; rank >= 2 when causal)
//   mask: undefined, or an additive mask of x's rank whose extents are each 1 or equal to x's
//         (e.g. [B, 1, 1, Tk] with -inf at padded keys); broadcast over the axes of extent 1.
//   causal: key j is masked for query i when j > i + (Tk - Tq), so a query block that ends at the
//         last key (incremental decoding, Tq < Tk) sees every earlier key.
// A row whose keys are all masked yields zeros (softmax) or -inf (log-softmax) and zero gradient.
// The mask itself receives no gradient.
#include "attnlab/tensor.h"

namespace attnlab {

Tensor softmax(const Tensor& x, const Tensor& mask = Tensor(), bool causal = false);
Tensor log_softmax(const Tensor& x, const Tensor& mask = Tensor(), bool causal = false);

}  // namespace attnlab
