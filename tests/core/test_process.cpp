#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/core.h>

#include "attnlab/error.h"
#include "attnlab/process.h"

using namespace attnlab;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path scratch_dir(const char* name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("attnlab-process-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void on_alarm(int) {}

}  // namespace

TEST_CASE("programs run with their output and exit status; a missing one is named") {
  const ProcessResult r = run_program({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK(find_program("sh").has_value());
  CHECK_FALSE(find_program("attnlab-no-such-program").has_value());
  CHECK_THROWS_WITH_AS(run_program({"attnlab-no-such-program"}), doctest::Contains("attnlab-no-such-program"), Error);
}

TEST_CASE("a program started in the background gets its environment and appends to its log") {
  const fs::path dir = scratch_dir("env");
  const fs::path log = dir / "run.log";
  std::ofstream(log) << "earlier line\n";
  ProgramLaunch launch;
  launch.argv = {"sh", "-c", "echo \"threads=$OMP_NUM_THREADS gpus=$CUDA_VISIBLE_DEVICES\" >&2; exit 7"};
  launch.stderr_path = log.string();
  launch.env = {{"OMP_NUM_THREADS", "3"}, {"CUDA_VISIBLE_DEVICES", "1,2"}};
  ::setenv("OMP_NUM_THREADS", "64", 1);  // replaced, not duplicated
  const pid_t pid = start_program(launch);
  ::unsetenv("OMP_NUM_THREADS");
  const EndedProgram ended = wait_for_one_of({pid});
  CHECK(ended.pid == pid);
  CHECK(ended.exit_code == 7);
  CHECK(read_all(log) == "earlier line\nthreads=3 gpus=1,2\n");
  fs::remove_all(dir);
}

TEST_CASE("a program that cannot start, or whose log cannot be opened, is named") {
  ProgramLaunch missing;
  missing.argv = {"attnlab-no-such-program"};
  CHECK_THROWS_WITH_AS(start_program(missing), doctest::Contains("attnlab-no-such-program"), Error);
  ProgramLaunch no_log;
  no_log.argv = {"true"};
  no_log.stderr_path = "/nonexistent-folder/run.log";
  CHECK_THROWS_WITH_AS(start_program(no_log), doctest::Contains("/nonexistent-folder/run.log"), Error);
}

TEST_CASE("waiting for some children reaps one of them and leaves the process's other children alone") {
  ProgramLaunch slow, quick, other;
  slow.argv = {"sh", "-c", "sleep 0.5; exit 1"};
  quick.argv = {"sh", "-c", "sleep 0.1; exit 3"};
  other.argv = {"sh", "-c", "exit 5"};  // ends first, but is not waited for
  const pid_t o = start_program(other);
  const pid_t s = start_program(slow);
  const pid_t q = start_program(quick);
  // A signal during the wait (no SA_RESTART: poll returns EINTR) does not end it.
  struct sigaction action = {};
  action.sa_handler = on_alarm;
  struct sigaction previous = {};
  ::sigaction(SIGALRM, &action, &previous);
  ::ualarm(50000, 0);
  const EndedProgram first = wait_for_one_of({s, q});
  CHECK(first.pid == q);
  CHECK(first.exit_code == 3);
  const EndedProgram second = wait_for_one_of({s});
  CHECK(second.pid == s);
  CHECK(second.exit_code == 1);
  ::sigaction(SIGALRM, &previous, nullptr);
  // The other child was not reaped by either wait: it is still there to be waited for.
  int status = 0;
  CHECK(::waitpid(o, &status, 0) == o);
  CHECK(WEXITSTATUS(status) == 5);
}
