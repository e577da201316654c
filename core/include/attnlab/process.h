#pragma once
// Running another program: to the end, reading what it prints (a compiler; the cluster's sbatch,
// squeue, sacct), or in the background and waited for later (a suite's rows). Programs are started
// with posix_spawn, so that a process with threads runs none of its own code between fork and exec,
// and with no signal blocked, whatever the calling thread blocks.
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
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

struct ProgramLaunch {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up on PATH
  std::string stderr_path;        // its standard error, appended to (created when missing); empty: ours
  std::vector<std::pair<std::string, std::string>> env;  // set in a copy of this process's environment
};

// Starts the program in the background, its standard input /dev/null, and returns its pid (a child
// of this process, to be waited for by wait_for_one_of). Throws an Error naming the program, or
// the log file that could not be opened, when it cannot start.
pid_t start_program(const ProgramLaunch& launch);

struct EndedProgram {
  pid_t pid = -1;
  int exit_code = 0;  // 128 + signal when killed by one
};

// Waits until one of `pids` (children of this process not waited for yet) ends, and reaps it.
// Other children of the process are left alone; a wait interrupted by a signal goes on.
EndedProgram wait_for_one_of(const std::vector<pid_t>& pids);

}  // namespace attnlab
