#pragma once
// A suite row trained in a child process (`attnlab run SUITE --row NAME@SEED`), for the process
// pool of row_pool.cpp: started with its share of the machine, waited for by its exit code.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::nmt {

struct RowCommand {
  std::vector<std::string> argv;  // the program first
  std::string log_path;           // the child's stderr, appended to
  std::int64_t threads = 1;       // OMP_NUM_THREADS and OPENBLAS_NUM_THREADS
  std::string visible_gpus;       // CUDA_VISIBLE_DEVICES when not empty
};

// Forks and executes the command; throws when fork fails. The child exits 126 when it cannot
// open the log, 127 when the program cannot be executed.
pid_t start_row_process(const RowCommand& command);

struct EndedProcess {
  pid_t pid = -1;  // < 0: this process has no child left to wait for
  int code = 0;    // the exit status, 128 + the signal for a child killed by one
};
// Waits for any child of this process to end.
EndedProcess wait_for_child();

}  // namespace attnlab::nmt
