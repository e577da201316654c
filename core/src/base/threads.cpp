#include "attnlab/threads.h"

#include <cblas.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "attnlab/error.h"
#include "cpu/parallel.h"

namespace attnlab {

int num_threads() { return omp_get_max_threads(); }

int allotted_cpus() {
  int cpus = 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  if (std::getenv("SLURM_JOB_ID") == nullptr) return cpus;
  for (const char* name : {"SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    try {
      const int given = std::stoi(value);
      if (given >= 1) return std::min(cpus, given);
    } catch (const std::exception&) {
    }
  }
  return cpus;
}

void set_num_threads(int n) {
  ATTNLAB_CHECK(n >= 1, "set_num_threads: need at least 1 thread, got {}", n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  cpu::parallel_for(n, grain, fn);
}

}  // namespace attnlab
