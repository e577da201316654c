#include "attnlab/nmt/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "attnlab/error.h"
#include "attnlab/nmt/io/write_faults.h"

namespace attnlab::nmt {
namespace {

std::string errno_text() { return describe_errno(errno); }

void fsync_folder(const std::filesystem::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ATTNLAB_CHECK(fd >= 0, "write_file_atomically: cannot open folder '{}' to fsync it: {}",
                folder.string(), errno_text());
  const int rc = ::fsync(fd);
  const std::string error = rc != 0 ? errno_text() : std::string();
  ::close(fd);
  ATTNLAB_CHECK(rc == 0, "write_file_atomically: fsync of folder '{}' failed: {}", folder.string(),
                error);
}

}  // namespace

std::filesystem::path atomic_temp_path(const std::filesystem::path& path) {
  static std::atomic<unsigned long> counter{0};
  const std::string name =
      fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter++);
  return path.parent_path() / name;
}

bool is_atomic_temp_file(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos;
}

void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(const ByteSink&)>& writer) {
  ATTNLAB_CHECK(!path.filename().empty(), "write_file_atomically: '{}' names no file",
                path.string());
  const std::filesystem::path folder =
      path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  const std::filesystem::path temp = atomic_temp_path(path);
  std::FILE* file = std::fopen(temp.c_str(), "wbx");  // x: fail if it exists
  ATTNLAB_CHECK(file != nullptr, "writing '{}' failed: cannot create the temporary file '{}': {}; the file is unchanged",
                path.string(), temp.string(), errno_text());
  auto abandon = [&] {
    if (file != nullptr) std::fclose(file);
    file = nullptr;
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
  };
  // Every failure names the file being replaced (left as it was) and the system error.
  const std::string target = path.string();
  try {
    std::size_t written = 0;
    const ByteSink sink = [&](const void* data, std::size_t size) {
      if (size == 0) return;
      if (const auto injected = injected_write_error(path, written + size)) {
        errno = *injected;
        throw Error(fmt::format("writing '{}' failed: {}; the file is unchanged", target, errno_text()));
      }
      ATTNLAB_CHECK(std::fwrite(data, 1, size, file) == size, "writing '{}' failed: {}; the file is unchanged",
                    target, errno_text());
      written += size;
    };
    writer(sink);
    ATTNLAB_CHECK(std::fflush(file) == 0, "writing '{}' failed: {}; the file is unchanged", target, errno_text());
    ATTNLAB_CHECK(::fsync(::fileno(file)) == 0, "writing '{}' failed (fsync): {}; the file is unchanged", target,
                  errno_text());
    const int rc = std::fclose(file);
    file = nullptr;
    ATTNLAB_CHECK(rc == 0, "writing '{}' failed (close): {}; the file is unchanged", target, errno_text());
    ATTNLAB_CHECK(std::rename(temp.c_str(), path.c_str()) == 0,
                  "writing '{}' failed: renaming '{}' over it: {}; the file is unchanged", target, temp.string(),
                  errno_text());
  } catch (...) {
    abandon();
    throw;
  }
  fsync_folder(folder);
}

void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  write_file_atomically(path, [&](const ByteSink& sink) { sink(bytes.data(), bytes.size()); });
}

}  // namespace attnlab::nmt
