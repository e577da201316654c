// CUDA kernel of gradient_clip.cpp: one thread (gradient_clip_kernels.cuh).
#include "cuda/kernel_util.cuh"
#include "ops/gradient_clip_cuda.h"
#include "ops/gradient_clip_kernels.cuh"

namespace attnlab::cuda {

void gradient_clip(const double* squares, double max_norm, std::uint64_t* check, double* norm, double* factor,
                   cudaStream_t stream) {
  gradient_clip_kernels::clip_kernel<<<1, 1, 0, stream>>>(squares, max_norm, check, norm, factor);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace attnlab::cuda
