#include "attnlab/process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string_view>

#include <fmt/core.h>

#include "attnlab/error.h"

extern char** environ;

namespace attnlab {

std::optional<std::string> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

namespace {

// posix_spawn's attributes: the program starts with no signal blocked, whatever this thread blocks
// (a training process blocks SIGINT and SIGTERM outside its signal thread, and the mask is
// inherited).
struct SpawnAttributes {
  posix_spawnattr_t attr;
  SpawnAttributes() {
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
};

struct FileActions {
  posix_spawn_file_actions_t actions;
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
};

// argv as posix_spawn takes it, pointing into `args`.
std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (std::string& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

ProcessResult run_program(const std::vector<std::string>& argv) {
  ATTNLAB_CHECK(!argv.empty(), "run_program: no program");
  int out_pipe[2], err_pipe[2];
  ATTNLAB_CHECK(::pipe2(out_pipe, O_CLOEXEC) == 0 && ::pipe2(err_pipe, O_CLOEXEC) == 0, "pipe: {}",
                std::strerror(errno));
  std::vector<std::string> args = argv;
  const std::vector<char*> cargs = c_argv(args);
  pid_t pid = 0;
  int spawned = 0;
  {
    FileActions fa;
    posix_spawn_file_actions_adddup2(&fa.actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa.actions, err_pipe[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    SpawnAttributes sa;
    spawned = ::posix_spawnp(&pid, cargs[0], &fa.actions, &sa.attr, cargs.data(), environ);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw Error(fmt::format("cannot run {}: {}", argv[0], std::strerror(spawned)));
  }
  // Both streams at once, so that neither pipe fills up while the other is read.
  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_streams = 2;
  char buffer[4096];
  while (open_streams > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_streams;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = exit_code_of(status);
  return result;
}

pid_t start_program(const ProgramLaunch& launch) {
  ATTNLAB_CHECK(!launch.argv.empty(), "start_program: no program");
  // The environment: ours, with launch.env's names replaced.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const auto& [name, value] : launch.env)
      replaced = replaced || (entry.size() > name.size() && entry.substr(0, name.size()) == name && entry[name.size()] == '=');
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [name, value] : launch.env) env.push_back(name + "=" + value);
  std::vector<std::string> args = launch.argv;
  const std::vector<char*> cargs = c_argv(args);
  const std::vector<char*> cenv = c_argv(env);
  // The log is opened here (close-on-exec; the child's copy is its stderr), so that a log that
  // cannot be written is named before anything starts.
  int log_fd = -1;
  if (!launch.stderr_path.empty()) {
    log_fd = ::open(launch.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ATTNLAB_CHECK(log_fd >= 0, "cannot run {}: cannot open its log {}: {}", launch.argv[0], launch.stderr_path,
                  std::strerror(errno));
  }
  pid_t pid = 0;
  int spawned = 0;
  {
    FileActions fa;
    posix_spawn_file_actions_addopen(&fa.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (log_fd >= 0) posix_spawn_file_actions_adddup2(&fa.actions, log_fd, STDERR_FILENO);
    SpawnAttributes sa;
    spawned = ::posix_spawnp(&pid, cargs[0], &fa.actions, &sa.attr, cargs.data(), cenv.data());
  }
  if (log_fd >= 0) ::close(log_fd);
  ATTNLAB_CHECK(spawned == 0, "cannot run {}: {}", launch.argv[0], std::strerror(spawned));
  return pid;
}

EndedProgram wait_for_one_of(const std::vector<pid_t>& pids) {
  ATTNLAB_CHECK(!pids.empty(), "wait_for_one_of: no process to wait for");
  // One pidfd per child, readable once it has ended: poll sleeps until one of them has, and no
  // other child of this process is reaped. Without pidfds (Linux before 5.3), a poll every 50 ms.
  std::vector<pollfd> fds;
  for (const pid_t pid : pids) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) break;
    fds.push_back({fd, POLLIN, 0});
  }
  const bool polling = fds.size() == pids.size();
  const auto close_all = [&] {
    for (const pollfd& p : fds) ::close(p.fd);
  };
  for (;;) {
    for (const pid_t pid : pids) {
      int status = 0;
      pid_t r;
      while ((r = ::waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR) {
      }
      if (r == pid) {
        close_all();
        return {pid, exit_code_of(status)};
      }
      if (r < 0) {
        const int error = errno;
        close_all();
        throw Error(fmt::format("waiting for process {}: {}", pid, std::strerror(error)));
      }
    }
    if (polling) ::poll(fds.data(), fds.size(), -1);  // EINTR: look again
    else ::poll(nullptr, 0, 50);
  }
}

}  // namespace attnlab
