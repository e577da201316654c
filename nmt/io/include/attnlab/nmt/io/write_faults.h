#pragma once
// Write failures on purpose, to test what a full disk does to a run. The environment variable
//
//   ATTNLAB_FAULT_WRITE=PATTERN:ERROR[:BYTES]
//
// makes every atomic write (atomic_file.h) of a file whose name contains PATTERN fail once BYTES
// bytes (default 0) have been written, with the system error ERROR (ENOSPC, EDQUOT, EIO, EROFS or
// EACCES), exactly as a failing write(2) would. Unset: nothing is injected (one getenv per write).
//
// Also: the text of a system error as attnlab prints it, with its symbolic name and number.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace attnlab::nmt {

// The injected error for a write of `target` that would bring it to `bytes_after` bytes, if any.
// Throws attnlab::Error when ATTNLAB_FAULT_WRITE is malformed.
std::optional<int> injected_write_error(const std::filesystem::path& target, std::size_t bytes_after);

// "No space left on device (ENOSPC, errno 28)".
std::string describe_errno(int error);

}  // namespace attnlab::nmt
