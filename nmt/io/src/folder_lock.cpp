#include "attnlab/nmt/io/folder_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>

#include "attnlab/error.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

std::string lock_path(const std::string& folder) { return (fs::path(folder) / "lock").string(); }

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The file's "pid P host H since T" line; fields left empty when it cannot be read.
LockHolder read_holder_line(const std::string& path) {
  LockHolder holder;
  std::ifstream in(path);
  std::string key;
  while (in >> key) {
    if (key == "pid") in >> holder.pid;
    else if (key == "host") in >> holder.host;
    else if (key == "since") in >> holder.since;
  }
  return holder;
}

struct flock whole_file(short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 0;  // to the end, however long
  lock.l_pid = 0;  // required for open-file-description locks
  return lock;
}

}  // namespace

FolderLock FolderLock::acquire(const std::string& folder, const std::string& what) { return take(folder, what, false); }

FolderLock FolderLock::acquire_waiting(const std::string& folder, const std::string& what) {
  return take(folder, what, true);
}

FolderLock FolderLock::take(const std::string& folder, const std::string& what, bool wait) {
  fs::create_directories(folder);
  const std::string path = lock_path(folder);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ATTNLAB_CHECK(fd >= 0, "cannot open the lock file {}: {}", path, std::strerror(errno));
  struct flock lock = whole_file(F_WRLCK);
  int rc = 0;
  while ((rc = ::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock)) != 0 && wait && errno == EINTR) {
  }
  if (rc != 0) {
    const int error = errno;
    ::close(fd);
    if (error != EACCES && error != EAGAIN) throw Error(fmt::format("cannot lock {}: {}", path, std::strerror(error)));
    const LockHolder h = read_holder_line(path);
    throw FolderInUse(fmt::format("{} {} is in use by another attnlab process (pid {} on host {}, since {}); wait for it to "
                            "finish or stop it, a stopped run resumes from its last checkpoint",
                            what, folder, h.pid, h.host.empty() ? "?" : h.host, h.since.empty() ? "?" : h.since));
  }
  const std::string line = fmt::format("pid {} host {} since {}\n", ::getpid(), host_name(), utc_now());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    const int error = errno;
    ::close(fd);
    throw Error(fmt::format("cannot write the lock file {}: {}", path, std::strerror(error)));
  }
  return FolderLock(fd);
}

std::optional<LockHolder> FolderLock::holder(const std::string& folder) {
  const std::string path = lock_path(folder);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct flock query = whole_file(F_WRLCK);
  const int rc = ::fcntl(fd, F_OFD_GETLK, &query);
  ::close(fd);
  if (rc != 0 || query.l_type == F_UNLCK) return std::nullopt;
  LockHolder h = read_holder_line(path);
  return h;
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

}  // namespace attnlab::nmt
