#include "file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "attnlab/error.h"

namespace attnlab::nmt::detail {

void write_file_atomic(const std::string& path, std::span<const std::string_view> parts) {
  static std::atomic<unsigned long> counter{0};
  const std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ATTNLAB_CHECK(!ec, "cannot create directory '{}': {}", dir.string(), ec.message());

  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ATTNLAB_CHECK(fd >= 0, "cannot create '{}': {}", tmp, std::strerror(errno));
  for (const std::string_view bytes : parts) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw_error(fmt::format("cannot write '{}': {}", tmp, std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw_error(fmt::format("cannot flush '{}': {}", tmp, std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw_error(fmt::format("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(err)));
  }
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);  // best effort: makes the rename itself durable
    ::close(dir_fd);
  }
}

std::string read_file_bytes(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  ATTNLAB_CHECK(in.good(), "cannot open {} '{}': {}", what, path, std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ATTNLAB_CHECK(!in.bad(), "error reading {} '{}'", what, path);
  return bytes;
}

}  // namespace attnlab::nmt::detail
