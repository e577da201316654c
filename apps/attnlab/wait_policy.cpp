// How long OpenMP threads spin before they sleep when they wait for each other. libgomp spins
// 300000 times by default: the fastest on idle cores, but a run that shares its cores with
// another process (a compiler, a second training) keeps 10-12 % of its speed, since its threads
// spin on a core the other process needs. With 1000 spins it keeps 52-57 %, and loses 7 % alone
// (bench/omp_wait_policy.sh; bench/README.md). libgomp reads the setting when it is loaded, before
// main: the program sets it and starts itself again, once, unless the user set a policy.
#include <unistd.h>

#include <cstdlib>

#include "wait_policy.h"

namespace attnlab::app {

void settle_openmp_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  ::setenv("GOMP_SPINCOUNT", kSpinCount, 1);
  ::execv("/proc/self/exe", argv);
  // Not restarted (no /proc): the run goes on with libgomp's default.
}

}  // namespace attnlab::app
