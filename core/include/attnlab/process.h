#pragma once
// Running another program (a compiler; the cluster's sbatch, squeue, sacct) and reading what it prints.
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

struct ProcessResult {
  int exit_code = 0;  // 128 + signal when killed by one
  std::string out, err;
};

// The full path of `name` on PATH, nullopt when it is not installed.
std::optional<std::string> find_program(const std::string& name);

// Runs argv[0] (looked up on PATH) with the arguments, waits, and returns its exit status and
// output. Throws an Error naming the program when it cannot be started.
ProcessResult run_program(const std::vector<std::string>& argv);

}  // namespace attnlab
