#include "attnlab/nmt/io/file_util.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "attnlab/error.h"
#include "attnlab/nmt/io/atomic_file.h"

namespace attnlab::nmt::detail {

void write_file_atomic(const std::string& path, std::span<const std::string_view> parts) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ATTNLAB_CHECK(!ec, "cannot create directory '{}': {}", dir.string(), ec.message());
  write_file_atomically(target, [&](const ByteSink& sink) {
    for (const std::string_view bytes : parts) sink(bytes.data(), bytes.size());
  });
}

std::string read_file_bytes(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  ATTNLAB_CHECK(in.good(), "cannot open {} '{}': {}", what, path, std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ATTNLAB_CHECK(!in.bad(), "error reading {} '{}'", what, path);
  return bytes;
}

}  // namespace attnlab::nmt::detail
