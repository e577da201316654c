#pragma once
// Element type conversion that autodiff can see through.
#include "attnlab/tensor.h"

namespace attnlab {

// x converted to `dtype` (to bf16: round to nearest even; between floats and integers as
// Tensor::to(DType)). x itself when it already has that dtype. Between floating dtypes the
// gradient passes straight through, converted back to x's dtype (the derivative of the rounding
// is taken as 1), so a bf16 copy of an f32 weight hands its gradient back to the weight in f32.
// Throws an Error when x requires a gradient and `dtype` is not floating.
Tensor cast(const Tensor& x, DType dtype);

}  // namespace attnlab
