#include "attnlab/expr/kernel_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "attnlab/env.h"
#include "attnlab/error.h"

namespace attnlab::expr {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// An exclusive lock on `path` (created), released when the object goes.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    ATTNLAB_CHECK(fd_ >= 0, "kernel cache: cannot open the lock {}: {}", path.string(), std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      ATTNLAB_CHECK(errno == EINTR, "kernel cache: cannot lock {}: {}", path.string(), std::strerror(errno));
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

bool present(const fs::path& artifact, const fs::path& source_file, const std::string& source) {
  std::error_code ec;
  return fs::is_regular_file(artifact, ec) && fs::file_size(artifact, ec) > 0 && read_file(source_file) == source;
}

// Writes `text` to `path` through a temporary file renamed into place.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    ATTNLAB_CHECK(out.good(), "kernel cache: cannot write {}", tmp.string());
  }
  fs::rename(tmp, path);
}

}  // namespace

fs::path kernel_cache_dir() {
  if (auto dir = env::value("ATTNLAB_KERNEL_CACHE")) return fs::path(*dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return fs::path(xdg) / "attnlab" / "kernels";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : "/tmp") / ".cache" / "attnlab" / "kernels";
}

std::string hash_hex(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

bool artifact_present(const std::string& key, const std::string& extension, const std::string& source) {
  const fs::path dir = kernel_cache_dir();
  return present(dir / (key + extension), dir / (key + ".src"), source);
}

Cached cached_artifact(const std::string& key, const std::string& extension, const std::string& source,
                       const std::function<void(const fs::path&, const fs::path&)>& make) {
  const fs::path dir = kernel_cache_dir();
  const fs::path artifact = dir / (key + extension), source_file = dir / (key + ".src");
  if (present(artifact, source_file, source)) return {artifact, false};
  std::error_code ec;
  fs::create_directories(dir, ec);
  ATTNLAB_CHECK(fs::is_directory(dir), "kernel cache: cannot create the folder {} ({}); set ATTNLAB_KERNEL_CACHE to a "
                "writable folder", dir.string(), ec.message());
  FileLock lock(dir / (key + ".lock"));
  // Another process may have made it while this one waited.
  if (present(artifact, source_file, source)) return {artifact, false};
  const fs::path work = dir / (key + ".work." + std::to_string(::getpid()));
  fs::create_directories(work);
  const fs::path src = work / "source", out = work / ("artifact" + extension);
  {
    std::ofstream s(src, std::ios::binary | std::ios::trunc);
    s << source;
  }
  try {
    make(src, out);
  } catch (...) {
    fs::remove_all(work, ec);
    throw;
  }
  fs::rename(out, artifact);
  write_atomically(source_file, source);
  fs::remove_all(work, ec);
  return {artifact, true};
}

}  // namespace attnlab::expr
