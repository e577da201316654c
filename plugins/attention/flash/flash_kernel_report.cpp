#include "flash_kernel_report.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attnlab::flash {
namespace {

std::string kib(std::size_t bytes) { return fmt::format("{} KiB", (bytes + 1023) / 1024); }

// Why a block does not run on tensor cores here (the device is sm_80+, so it is the memory).
std::string too_big(std::size_t bytes, const cuda::DeviceLimits& d) {
  return fmt::format("its block needs {} of shared memory, the GPU gives {}", kib(bytes), kib(d.smem_optin));
}

// The Hopper part of the line on an sm_90 device.
std::string describe_hopper(const cuda::DeviceLimits& d, const HopperKernels& h) {
  if (!h.built)
    return "Hopper's warpgroup MMA kernels are not in this build (no CUTLASS: cmake's ATTNLAB_CUTLASS_DIR); "
           "the sm_80 kernels run";
  if (!h.opted_in)
    return "Hopper's warpgroup MMA kernels are built but off until ATTNLAB_FLASH_SM90=1 (their parity is "
           "checked by bench/gpu_checks.sh's sm90 phase); the sm_80 kernels run";
  std::vector<std::string> sizes;
  for (auto [size, bytes] : {std::pair{64, h.smem64}, std::pair{128, h.smem128}})
    if (cuda::sm90_block_fits(d, bytes)) sizes.push_back(std::to_string(size));
  if (sizes.empty()) return "Hopper's warpgroup MMA kernels: their blocks do not fit; the sm_80 kernels run";
  return fmt::format("bf16 at d {} (d_k = d_v): Hopper's warpgroup MMA (sm_90a, ATTNLAB_FLASH_SM90=1), forward and "
                     "backward with masks, dropout, ALiBi and relative positions",
                     fmt::join(sizes, " and "));
}

}  // namespace

std::string describe_cuda_kernels(const cuda::DeviceLimits& d, std::span<const TensorCoreBlocks> blocks,
                                  const HopperKernels& hopper) {
  if (d.major == 0) return "its limits could not be read: every problem on the FMA kernels";
  if (d.major < 8)
    return fmt::format("sm_{}{} has no bf16 tensor-core MMA (sm_80 and newer): every problem on the FMA kernels",
                       d.major, d.minor);
  std::vector<std::string> parts;
  for (const TensorCoreBlocks& b : blocks) {
    const bool fwd = cuda::device_takes_tensor_cores(d, b.forward);
    const bool bwd = cuda::device_takes_tensor_cores(d, b.backward);
    if (fwd && bwd) parts.push_back(fmt::format("bf16 d {}: tensor cores (WMMA), forward and backward", b.head_size));
    else if (fwd)
      parts.push_back(fmt::format("bf16 d {}: tensor cores (WMMA) forward, FMA kernels backward ({})", b.head_size,
                                  too_big(b.backward, d)));
    else if (bwd)
      parts.push_back(fmt::format("bf16 d {}: FMA kernels forward ({}), tensor cores (WMMA) backward", b.head_size,
                                  too_big(b.forward, d)));
    else
      parts.push_back(
          fmt::format("bf16 d {}: FMA kernels ({})", b.head_size, too_big(std::max(b.forward, b.backward), d)));
  }
  parts.push_back("f32, other head sizes, bucketed position terms (relative) and single-query steps: FMA kernels");
  std::string line = fmt::format("{}", fmt::join(parts, "; "));
  if (d.major == 9 && d.minor == 0) line += "; " + describe_hopper(d, hopper);
  return line;
}

}  // namespace attnlab::flash
