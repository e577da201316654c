#pragma once
// One writer per folder. A command that writes a run or suite folder holds an exclusive lock on
// <folder>/lock (a Linux open-file-description lock, which the kernel releases when the process
// ends in any way, kill -9 included: no stale lock is ever left to clean up; unlike a classic
// POSIX lock it is not dropped when the same process closes another descriptor of the file). The file also says who holds it, for
// messages and for readers that cannot query a lock held on another machine.
#include <optional>
#include <string>

#include "attnlab/error.h"

namespace attnlab::nmt {

// Thrown by FolderLock::acquire when another process holds the folder.
class FolderInUse : public Error {
 public:
  using Error::Error;
};

struct LockHolder {
  long pid = 0;          // the holder's process id (on its host)
  std::string host;      // the holder's host name
  std::string since;     // when it took the lock, UTC, ISO 8601
};

class FolderLock {
 public:
  // Takes the lock of `folder` (created if needed) or throws an Error at once naming the folder
  // and the holder's pid and host. `what` names the folder in the message ("run folder").
  static FolderLock acquire(const std::string& folder, const std::string& what);
  // The same, waiting for the holder to release it instead of throwing: for short critical
  // sections that several processes take in turn (a search's decisions).
  static FolderLock acquire_waiting(const std::string& folder, const std::string& what);
  // Who holds the lock of `folder` now, without taking it; nullopt when nobody does.
  static std::optional<LockHolder> holder(const std::string& folder);

  FolderLock(FolderLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FolderLock& operator=(FolderLock&&) = delete;
  FolderLock(const FolderLock&) = delete;
  ~FolderLock();

 private:
  explicit FolderLock(int fd) : fd_(fd) {}
  static FolderLock take(const std::string& folder, const std::string& what, bool wait);
  int fd_ = -1;
};

}  // namespace attnlab::nmt
