#pragma once
// The bit casts and the 64-bit atomics of the core's kernels (element_access.cuh, index_check.cuh)
// and of the code generated for score expressions (their infinities, the learned tensors'
// fixed-point accumulators), on host memory through std::atomic_ref: for the host emulations of
// CUDA (cuda_host_emulation.h, cuda_sm90_host_emulation.h), whose host compiler has no device
// intrinsics.
#include <atomic>
#include <bit>

inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  std::atomic_ref<unsigned long long> a(*p);
  unsigned long long old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}
