#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "attnlab/nmt/io/folder_lock.h"
#include "nmt_test_util.h"

using namespace attnlab::nmt;

TEST_CASE("a folder lock refuses a second writer at once, naming the folder, pid and host") {
  testing::TempDir dir("folder_lock");
  const std::string folder = dir.file("run");
  CHECK_FALSE(FolderLock::holder(folder).has_value());
  {
    const FolderLock lock = FolderLock::acquire(folder, "run folder");
    const auto holder = FolderLock::holder(folder);
    REQUIRE(holder.has_value());
    CHECK(holder->pid == ::getpid());
    CHECK_FALSE(holder->host.empty());
    try {
      (void)FolderLock::acquire(folder, "run folder");
      FAIL("a second writer was let in");
    } catch (const FolderInUse& e) {
      const std::string message = e.what();
      CHECK(message.find("run folder " + folder) != std::string::npos);
      CHECK(message.find("pid " + std::to_string(::getpid())) != std::string::npos);
      CHECK(message.find(holder->host) != std::string::npos);
    }
  }
  // Released with the object: free again.
  CHECK_FALSE(FolderLock::holder(folder).has_value());
  CHECK_NOTHROW((void)FolderLock::acquire(folder, "run folder"));
}

TEST_CASE("the lock of a process killed with SIGKILL is free at once, no cleanup needed") {
  testing::TempDir dir("folder_lock_kill");
  const std::string folder = dir.file("run");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const FolderLock lock = FolderLock::acquire(folder, "run folder");
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  const auto holder = FolderLock::holder(folder);
  REQUIRE(holder.has_value());
  CHECK(holder->pid == child);
  CHECK_THROWS_AS((void)FolderLock::acquire(folder, "run folder"), FolderInUse);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  CHECK_FALSE(FolderLock::holder(folder).has_value());
  CHECK_NOTHROW((void)FolderLock::acquire(folder, "run folder"));
}
