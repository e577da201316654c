#pragma once
// What `attnlab plugins` says about flash on one GPU: which of its CUDA kernels serve which
// problems there, decided as forward() and backward() decide (device_takes_tensor_cores in
// flash_attention_cuda.h). Plain C++: every build compiles it, and the tests hold it to the real
// block sizes against the limits of known GPUs.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "flash_attention_cuda.h"
#include "flash_sm90.h"

namespace attnlab::flash {

// The tensor-core blocks at one head size (d_k = d_v): tc_forward_smem and tc_backward_smem.
struct TensorCoreBlocks {
  std::int64_t head_size = 0;
  std::size_t forward = 0, backward = 0;
};

// The Hopper kernels (flash_sm90.h): whether this build has them, whether ATTNLAB_FLASH_SM90=1
// asks for them, and the shared memory of their largest block at d 64 and 128 (sm90_smem_needed).
struct HopperKernels {
  bool built = false, opted_in = false;
  std::size_t smem64 = 0, smem128 = 0;
};

// One line: for each head size of `blocks`, whether bf16 runs on the tensor-core kernels forward
// and backward on a device with limits `d` (and where not, why), then what the FMA kernels serve;
// on sm_90, whether the Hopper kernels run and, where not, why.
std::string describe_cuda_kernels(const cuda::DeviceLimits& d, std::span<const TensorCoreBlocks> blocks,
                                  const HopperKernels& hopper = {});

}  // namespace attnlab::flash
