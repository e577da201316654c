#pragma once
// The arithmetic of gradient_clip, shared by its CPU path and its CUDA kernel so that both give
// the same bits (IEEE sqrt and division, correctly rounded on both). Plain header: nvcc reads it.
#include <cmath>

#include "attnlab/host_device.h"

namespace attnlab::gradient_clip_math {

inline constexpr double kNormEps = 1e-6;  // PyTorch's clip_grad_norm_ adds this to the norm
inline constexpr double kDoubleMax = 1.7976931348623157e308;

ATTNLAB_HOST_DEVICE double norm_of(double squares) { return sqrt(squares); }
// False for inf and NaN (NaN compares false with everything).
ATTNLAB_HOST_DEVICE bool finite(double x) { return x >= -kDoubleMax && x <= kDoubleMax; }
// min(1, max_norm / (norm + eps)), with std::min's choice: the quotient only when it is below 1.
ATTNLAB_HOST_DEVICE double factor_of(double norm, double max_norm) {
  const double f = max_norm / (norm + kNormEps);
  return f < 1.0 ? f : 1.0;
}

}  // namespace attnlab::gradient_clip_math
