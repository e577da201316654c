#include "attnlab/threads.h"

#include <cblas.h>
#include <omp.h>

#include "attnlab/error.h"

namespace attnlab {

int num_threads() { return omp_get_max_threads(); }

void set_num_threads(int n) {
  ATTNLAB_CHECK(n >= 1, "set_num_threads: need at least 1 thread, got {}", n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

}  // namespace attnlab
