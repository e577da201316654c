#pragma once
// The flash kernels' blocks as the kernel-choice tests hand them to choose_kernel (a
// BuiltKernels, flash_kernel_choice.h), worked out from the layouts written next to each kernel:
// tests/plugins/test_flash_kernels_emulated.cpp holds the tensor-core numbers to the layouts
// themselves, tests/flash_sm90 the Hopper ones. Bytes of dynamic shared memory:
//   tensor cores, forward:  d_k = d_v = 64: 70 KiB; 64/128: 94; 128/64: 86; 128/128: 110;
//   tensor cores, backward (the larger of dQ and dK/dV, dK/dV here): 88.5, 104.5, 104.5, 120.5;
//   Hopper, forward:  d 64: 81 KiB, d 128: 161 KiB (both with 1 KiB of alignment);
//   Hopper, backward: d 64: 65 KiB, d 128: 129 KiB.
#include <array>
#include <cstddef>
#include <cstdint>

#include "flash_kernel_choice.h"

namespace flash_kernel_blocks {

namespace fc = attnlab::flash::cuda;

// The numbers below are for head sizes 64 and 128, in that order.
static_assert(fc::MmaHeadSizes::list == std::array<std::int64_t, 2>{64, 128});
inline constexpr std::size_t kKiB = 1024;
inline constexpr std::size_t kTcForward[2][2] = {{70 * kKiB, 94 * kKiB}, {86 * kKiB, 110 * kKiB}};
inline constexpr std::size_t kTcBackward[2][2] = {{90624, 107008}, {107008, 123392}};
inline constexpr std::size_t kHopperForward[2] = {81 * kKiB, 161 * kKiB};
inline constexpr std::size_t kHopperBackward[2] = {65 * kKiB, 129 * kKiB};

// A build with the tensor-core kernels, and the Hopper kernels where `hopper_built` (asked for
// where `opted_in`: ATTNLAB_FLASH_SM90=1).
inline fc::BuiltKernels blocks(bool hopper_built, bool opted_in) {
  fc::BuiltKernels b;
  b.hopper_built = hopper_built;
  b.hopper_opted_in = opted_in;
  for (std::size_t i = 0; i < fc::MmaHeadSizes::count; ++i) {
    if (hopper_built) {
      b.hopper_forward[i] = kHopperForward[i];
      b.hopper_backward[i] = kHopperBackward[i];
    }
    for (std::size_t j = 0; j < fc::MmaHeadSizes::count; ++j) {
      b.tc_forward[i][j] = kTcForward[i][j];
      b.tc_backward[i][j] = kTcBackward[i][j];
    }
  }
  return b;
}

}  // namespace flash_kernel_blocks
