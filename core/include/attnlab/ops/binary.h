#pragma once
// Elementwise arithmetic with bias broadcasting.
// Shapes: a [..., S] and b [S] (S any suffix of a's shape, b broadcast over a's leading axes), or
// the other way round, or equal shapes, or one side with a single element. The result has the
// larger shape. Mismatches throw an Error naming the op and both shapes. Floating dtypes only.
#include "attnlab/tensor.h"

namespace attnlab {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
// x * factor.
Tensor scale(const Tensor& x, double factor);

// Not differentiable: dst += src (same shape, dtype and device); used for gradient accumulation.
void add_inplace(Tensor& dst, const Tensor& src);

}  // namespace attnlab
