#pragma once
// Work splitting for the CPU kernels. Ranges smaller than `grain` run on the calling thread,
// so tiny tensors pay no threading cost.
#include <cstdint>

#include <omp.h>

namespace attnlab::cpu {

// Calls fn(begin, end) over disjoint chunks covering [0, n).
template <typename Fn>
void parallel_for(std::int64_t n, std::int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (n <= grain || omp_get_max_threads() == 1 || omp_in_parallel()) {
    fn(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads();
    const std::int64_t id = omp_get_thread_num();
    const std::int64_t chunk = (n + threads - 1) / threads;
    const std::int64_t begin = id * chunk;
    const std::int64_t end = begin + chunk < n ? begin + chunk : n;
    if (begin < end) fn(begin, end);
  }
}

// Grain sizes: elementwise loops split above ~32k elements, row loops by the row length.
inline constexpr std::int64_t kElementwiseGrain = 1 << 15;
inline std::int64_t row_grain(std::int64_t row_length) {
  return row_length >= kElementwiseGrain ? 1 : kElementwiseGrain / (row_length > 0 ? row_length : 1);
}

}  // namespace attnlab::cpu
