#pragma once
// The launcher of gradient_clip_cuda.cu (plain types; pointers on the current device).
#include <cstdint>

#include "cuda/launch.h"

namespace attnlab::cuda {

// One thread computes *norm and *factor from *squares (gradient_clip_kernels.cuh); a norm that is
// not finite is recorded in *check (nullptr: not recorded).
void gradient_clip(const double* squares, double max_norm, std::uint64_t* check, double* norm, double* factor,
                   cudaStream_t stream);

}  // namespace attnlab::cuda
