#pragma once
// The device side of the index checks (index_check.h): a kernel that finds a bad index records it
// in its call's word, where the smallest key (the first bad position) wins. No CUDA header, so
// that the host emulation of the tests runs kernels that use it.
#include <cstdint>

#include "device/index_check.h"

namespace attnlab::cuda {

// Records bad value `v` at `position` in `word` (from Context::reserve_index_check). A null word
// records nothing: the caller checked the indices on the host.
__device__ __forceinline__ void record_bad_index(std::uint64_t* word, std::int64_t position, std::int64_t v) {
  if (word == nullptr) return;
  atomicMin(reinterpret_cast<unsigned long long*>(word),
            static_cast<unsigned long long>(index_check::key(position, v)));
}

}  // namespace attnlab::cuda
