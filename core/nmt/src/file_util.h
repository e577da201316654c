#pragma once
// Internal file helpers of the nmt library.
#include <span>
#include <string>
#include <string_view>

namespace attnlab::nmt::detail {

// Writes the concatenation of `parts` to `path` atomically: a temporary file next to it (unique to this process and
// call), fsync, rename over `path`, fsync of the directory. Readers see the old file or the
// whole new one, never a part. Creates the parent directory. Throws attnlab::Error on failure.
void write_file_atomic(const std::string& path, std::span<const std::string_view> parts);
inline void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::span<const std::string_view>(&bytes, 1));
}

// The whole file as bytes; throws attnlab::Error naming `what` and the path when unreadable.
std::string read_file_bytes(const std::string& path, std::string_view what);

}  // namespace attnlab::nmt::detail
