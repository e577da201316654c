#pragma once
// Internal file helpers of the nmt library.
#include <span>
#include <string>
#include <string_view>

namespace attnlab::nmt::detail {

// Writes the concatenation of `parts` to `path` with write_file_atomically (atomic_file.h),
// creating the parent directory first. Throws attnlab::Error on failure.
void write_file_atomic(const std::string& path, std::span<const std::string_view> parts);
inline void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::span<const std::string_view>(&bytes, 1));
}

// The whole file as bytes; throws attnlab::Error naming `what` and the path when unreadable.
std::string read_file_bytes(const std::string& path, std::string_view what);

}  // namespace attnlab::nmt::detail
