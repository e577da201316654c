#pragma once
// Index checks made where the indices are. On a CUDA device the ids of an embedding and the
// targets of a cross-entropy are checked by the kernels that read them, not on a copy on the host:
// a copy would make the host wait for the device inside every training step. A kernel that finds a
// bad index records it in a 64-bit word of device memory (one word per op call, reserved from the
// device's IndexCheckLog, index_check_log.h), reads nothing out of range, and gives the affected
// rows NaN; the host reads the words at its next wait for the device (a download such as item(),
// or synchronize()) and throws the op's error there, before anything is saved.
//
// A word holds the smallest key of the bad indices of one call, so the first bad position wins
// (atomicMin): key = position << 32 | the value's low 32 bits after clamping to int32. Positions
// must stay below kMaxCheckedPositions (callers with more indices check on the host).
// No fmt, no CUDA headers: nvcc and the host compiler both read it.
#include <cstdint>

#include "attnlab/host_device.h"

namespace attnlab::index_check {

inline constexpr std::uint64_t kClean = ~std::uint64_t{0};  // no bad index recorded
inline constexpr std::int64_t kMaxCheckedPositions = (std::int64_t{1} << 32) - 1;
inline constexpr std::int64_t kValueMin = -(std::int64_t{1} << 31);
inline constexpr std::int64_t kValueMax = (std::int64_t{1} << 31) - 1;

// What an index must be: lo <= v < hi, or v == skip where has_skip (cross_entropy's ignore_index).
struct Rule {
  std::int64_t lo = 0, hi = 0;
  bool has_skip = false;
  std::int64_t skip = 0;
};

ATTNLAB_HOST_DEVICE bool allowed(std::int64_t v, const Rule& r) {
  return (r.has_skip && v == r.skip) || (v >= r.lo && v < r.hi);
}

// The key of bad value `v` at `position` (0 <= position < kMaxCheckedPositions).
ATTNLAB_HOST_DEVICE std::uint64_t key(std::int64_t position, std::int64_t v) {
  const std::int64_t clamped = v < kValueMin ? kValueMin : (v > kValueMax ? kValueMax : v);
  return (static_cast<std::uint64_t>(position) << 32) |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(static_cast<std::int32_t>(clamped)));
}
ATTNLAB_HOST_DEVICE std::int64_t key_position(std::uint64_t k) { return static_cast<std::int64_t>(k >> 32); }
// The recorded value: exact inside int32, kValueMin / kValueMax for anything beyond.
ATTNLAB_HOST_DEVICE std::int64_t key_value(std::uint64_t k) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(k & 0xffffffffu));
}

}  // namespace attnlab::index_check
