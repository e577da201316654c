#pragma once
// For tests: what jit_cpu.cpp keeps loaded, forgotten, so that the next cpu_kernels() call looks in
// the cache folder again as a new process would.
namespace attnlab::expr {
void forget_loaded_cpu_kernels();
}
