// gradient_clip: checks and dispatch (no autograd: clipping runs outside the tape).
#include "attnlab/ops/gradient_clip.h"

#include <cmath>

#include "dispatch.h"
#include "ops/gradient_clip_kernels.h"
#include "ops/op_util.h"

namespace attnlab {

GradientClip gradient_clip(const Tensor& squares, double max_norm) {
  detail::check_defined("gradient_clip", squares, "squares");
  ATTNLAB_CHECK(squares.rank() == 0 && squares.dtype() == DType::f64,
                "gradient_clip: squares must be a [] f64 tensor, got {}", squares.str());
  ATTNLAB_CHECK(std::isfinite(max_norm) && max_norm > 0, "gradient_clip: max_norm must be finite and > 0, got {}",
                max_norm);
  GradientClip out{Tensor::empty(Shape{}, DType::f64, squares.device()),
                   Tensor::empty(Shape{}, DType::f64, squares.device())};
  ATTNLAB_DISPATCH(squares.device(), detail::gradient_clip, squares, max_norm, out.norm, out.factor);
  return out;
}

}  // namespace attnlab
