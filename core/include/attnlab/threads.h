#pragma once
// Thread count of the CPU backend (OpenMP kernels and OpenBLAS share it), and the work splitting
// that plugins' CPU kernels may use.
#include <cstdint>
#include <functional>

namespace attnlab {

int num_threads();
// The CPUs this process was given: its affinity mask (taskset, cgroups, a scheduler's binding),
// capped by a Slurm allocation (SLURM_CPUS_PER_TASK, else SLURM_CPUS_ON_NODE) inside a Slurm job.
int allotted_cpus();
// Sets the thread count of our kernels and of OpenBLAS; n >= 1.
void set_num_threads(int n);

// Calls fn(begin, end) on disjoint chunks covering [0, n), on the core's CPU threads (one chunk
// per thread). Ranges of at most `grain` items run on the calling thread, as do calls made from
// inside another parallel_for. fn must not throw.
void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn);

}  // namespace attnlab
