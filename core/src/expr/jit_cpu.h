#pragma once
// For tests: what jit_cpu.cpp keeps loaded, forgotten, so that the next cpu_kernels() call looks in
// the cache folder again as a new process would.
#include <string>
#include <vector>

namespace attnlab::expr {
void forget_loaded_cpu_kernels();

// For tests: compiles C++ `source` with the kernels' flags and `extra` ones (include folders) into
// a shared object of the kernel cache (compiled once), loads it, and returns the address of each of
// `symbols` (extern "C" functions) in order.
std::vector<void*> compile_and_load(const std::string& source, const std::vector<std::string>& extra,
                                    const std::vector<std::string>& symbols);
}
