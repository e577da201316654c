#include "row_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "attnlab/error.h"
#include "attnlab/nmt/train/stop_signals.h"

namespace attnlab::nmt {

pid_t start_row_process(const RowCommand& command) {
  // Everything the child needs is made before fork: this process has other threads (the signal
  // thread), so the child should allocate as little as it can.
  const std::string threads = std::to_string(command.threads);
  std::vector<std::string> argv = command.argv;
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  ATTNLAB_CHECK(pid >= 0, "run_suite: fork failed");
  if (pid != 0) return pid;
  // The child, until execv or _exit: it never returns into the parent's code.
  if (std::FILE* f = std::freopen(command.log_path.c_str(), "a", stderr); f == nullptr) ::_exit(126);
  // OpenMP and OpenBLAS size their pools from these before the row sets its threads.
  ::setenv("OMP_NUM_THREADS", threads.c_str(), 1);
  ::setenv("OPENBLAS_NUM_THREADS", threads.c_str(), 1);
  if (!command.visible_gpus.empty()) ::setenv("CUDA_VISIBLE_DEVICES", command.visible_gpus.c_str(), 1);
  unblock_stop_signals();  // this process has them blocked (install_stop_signal_handlers)
  ::execv(argv.front().c_str(), args.data());
  ::_exit(127);
}

EndedProcess wait_for_child() {
  int status = 0;
  EndedProcess ended;
  ended.pid = ::waitpid(-1, &status, 0);
  if (ended.pid >= 0) ended.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return ended;
}

}  // namespace attnlab::nmt
