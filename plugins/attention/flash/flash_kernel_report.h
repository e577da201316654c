#pragma once
// What `attnlab plugins` says about flash on one GPU: which of its CUDA kernels serve which
// problems there, as choose_kernel() (flash_kernel_choice.h) decides them for forward() and
// backward(). Plain C++: every build compiles it, and the tests hold it to the choice on the
// limits of known GPUs.
#include <string>

#include "flash_attention_cuda.h"
#include "flash_kernel_choice.h"

namespace attnlab::flash {

// One line: for bf16 at d_k = d_v = 64 and 128, which kernels run forward and backward on a device
// with limits `d` and a build offering `built` (and where the better ones do not, why); what the
// FMA kernels serve; whether relative positions' bucket terms run on the Hopper kernels; and on an
// sm_90 device where the Hopper kernels do not run, why.
std::string describe_cuda_kernels(const cuda::DeviceLimits& d, const cuda::BuiltKernels& built);

}  // namespace attnlab::flash
