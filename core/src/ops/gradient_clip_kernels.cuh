#pragma once
// The kernel of gradient_clip's CUDA path (gradient_clip_cuda.cu), in a header so that the tests
// run it under the host emulation too.
#include <cstdint>
#include <limits>

#include "cuda/index_check.cuh"
#include "ops/gradient_clip_math.h"

namespace attnlab::cuda::gradient_clip_kernels {

// One thread: norm = sqrt(squares), factor = min(1, max_norm / (norm + eps)); a norm that is not
// finite is recorded in the call's check word (position 0) and gives factor NaN.
__global__ void clip_kernel(const double* squares,  // squares: (1)
                            double max_norm,
                            std::uint64_t* check,   // the call's index-check word
                            double* norm,           // norm: (1)
                            double* factor) {       // factor: (1)
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  namespace m = gradient_clip_math;
  const double n = m::norm_of(*squares);
  *norm = n;
  if (m::finite(n)) {
    *factor = m::factor_of(n, max_norm);
    return;
  }
  record_bad_index(check, 0, n != n ? 1 : 0);  // the value says NaN (1) or inf (0); the message says both
  *factor = std::numeric_limits<double>::quiet_NaN();
}

}  // namespace attnlab::cuda::gradient_clip_kernels
