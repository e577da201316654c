#include "attnlab/threads.h"

#include <cblas.h>
#include <omp.h>

#include "attnlab/error.h"
#include "cpu/parallel.h"

namespace attnlab {

int num_threads() { return omp_get_max_threads(); }

void set_num_threads(int n) {
  ATTNLAB_CHECK(n >= 1, "set_num_threads: need at least 1 thread, got {}", n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  cpu::parallel_for(n, grain, fn);
}

}  // namespace attnlab
