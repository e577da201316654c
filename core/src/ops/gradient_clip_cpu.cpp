// CPU kernel of gradient_clip.cpp: gradient_clip_math.h's arithmetic on the one value.
#include "ops/gradient_clip_kernels.h"
#include "ops/gradient_clip_math.h"
#include "ops/op_util.h"

namespace attnlab::detail {

void gradient_clip_cpu(const Tensor& squares, double max_norm, Tensor& norm, Tensor& factor) {
  namespace m = gradient_clip_math;
  const double n = m::norm_of(*squares.data<double>());
  ATTNLAB_CHECK(m::finite(n), "gradient_clip: {}", kGradientClipNotFinite);
  *norm.data<double>() = n;
  *factor.data<double>() = m::factor_of(n, max_norm);
}

}  // namespace attnlab::detail
