#pragma once
// The target check of cross_entropy's CUDA path (cross_entropy_cuda.cu), in a header so that the
// tests run it under the host emulation too: every target must be ignore_index or in [0, V). A bad
// one is recorded in the call's index-check word (index_check.h); the kept ones are counted.
#include <cstdint>

#include "cuda/index_check.cuh"

namespace attnlab::cuda::cross_entropy_kernels {

inline constexpr int kCheckThreads = 256;

// Each thread counts the kept targets of its grid-stride share; the block adds the counts in
// shared memory and its thread 0 adds the block's total to *kept (integers: any order gives the
// same count).
template <typename I>
__global__ void check_targets_kernel(const I* targets,             // targets: (n)
                                     std::int64_t n, index_check::Rule rule,
                                     std::uint64_t* check,         // the call's index-check word
                                     unsigned long long* kept) {   // kept: (1), zeroed
  static __shared__ unsigned long long counts[kCheckThreads];  // static: the emulation shares it too
  unsigned long long mine = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const auto t = static_cast<std::int64_t>(targets[i]);
    if (!index_check::allowed(t, rule)) record_bad_index(check, i, t);
    else if (!(rule.has_skip && t == rule.skip)) ++mine;
  }
  counts[threadIdx.x] = mine;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) counts[threadIdx.x] += counts[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0 && counts[0] > 0) atomicAdd(kept, counts[0]);
}

}  // namespace attnlab::cuda::cross_entropy_kernels
