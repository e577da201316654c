#pragma once
// The kernels of embedding_cuda.cu and embedding_backward_cuda.cu, in a header so that the tests
// run them under the host emulation too (tests/ops/test_index_check_kernels_emulated.cpp).
//
// Forward: a gather, one thread per output element; an id outside [0, V) is recorded in the
// call's index-check word (index_check.h) and gives a NaN row, so nothing is read out of range.
// Backward, deterministic and without atomics or host copies: keys (the id, V for a bad one) and
// positions are sorted by key with a stable radix sort (CUB), which keeps the positions of one id
// in increasing order; then the first position of each run of equal keys sums its run's gradient
// rows in that order. The sums are therefore in the CPU's order (embedding_cpu.cpp): bit-identical
// to it and independent of the launch configuration.
#include <cstdint>

#include "cuda/element_access.cuh"
#include "cuda/index_check.cuh"

namespace attnlab::cuda::embedding_kernels {

template <typename T, typename I>
__global__ void forward_kernel(const T* weight,       // weight: (V, d)
                               const I* ids,          // ids: (n)
                               std::int64_t n, std::int64_t vocab, std::int64_t d,
                               std::uint64_t* check,  // the call's index-check word (or null)
                               T* out) {              // out: (n, d)
  const std::int64_t total = n * d;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / d, col = e % d;
    const auto id = static_cast<std::int64_t>(ids[row]);
    if (id < 0 || id >= vocab) {
      if (col == 0) record_bad_index(check, row, id);
      store(out, e, static_cast<compute_t<T>>(__int_as_float(0x7fc00000)));  // NaN
      continue;
    }
    out[e] = weight[id * d + col];  // copied, not computed: bf16 moves as its 16-bit pattern
  }
}

// The sort's input: keys[i] = ids[i] (V where outside [0, V): sorted last, summed nowhere),
// positions[i] = i.
template <typename I>
__global__ void sort_input_kernel(const I* ids,              // ids: (n)
                                  std::int64_t n, std::int64_t vocab,
                                  std::uint32_t* keys,       // keys: (n)
                                  std::uint32_t* positions) {  // positions: (n)
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const auto id = static_cast<std::int64_t>(ids[i]);
    keys[i] = static_cast<std::uint32_t>(id < 0 || id >= vocab ? vocab : id);
    positions[i] = static_cast<std::uint32_t>(i);
  }
}

// Block b takes sorted indices b, b + gridDim.x, ...; an index that starts a run of equal keys
// owns the key's row of dweight, and the block's threads stride over its d columns, each adding the
// run's gradient rows in sorted (= position) order.
template <typename T>
__global__ void run_sum_kernel(const T* dout,                   // dout: (n, d)
                               const std::uint32_t* keys,       // keys: (n), sorted
                               const std::uint32_t* positions,  // positions: (n), sorted with keys
                               std::int64_t n, std::int64_t vocab, std::int64_t d,
                               T* dweight) {                    // dweight: (V, d), zeroed
  for (std::int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const std::uint32_t key = keys[i];
    if (key >= vocab || (i > 0 && keys[i - 1] == key)) continue;  // a bad id, or not a run's start
    std::int64_t end = i + 1;
    while (end < n && keys[end] == key) ++end;
    T* dst = dweight + static_cast<std::int64_t>(key) * d;
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      compute_t<T> acc = 0;
      for (std::int64_t k = i; k < end; ++k) acc += load(dout, static_cast<std::int64_t>(positions[k]) * d + j);
      store(dst, j, acc);
    }
  }
}

}  // namespace attnlab::cuda::embedding_kernels
