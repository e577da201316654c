#pragma once
// The OpenMP wait policy of the attnlab program (wait_policy.cpp says why and what it measured).

namespace attnlab::app {

// The spin count attnlab runs with when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set.
inline constexpr const char* kSpinCount = "1000";

// Sets GOMP_SPINCOUNT to kSpinCount and restarts the program with it, unless the environment
// names a policy already (which the restarted program then does). Call first in main.
void settle_openmp_wait_policy(char** argv);

}  // namespace attnlab::app
