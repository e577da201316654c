#pragma once
// Durable, all-or-nothing file writes: a file is written under a temporary name in the same
// folder, flushed and fsync'ed, renamed over the target, and the folder is fsync'ed. A reader
// therefore sees either the old file or the complete new one, never a partial write; a crash
// leaves at most a temporary file (see is_atomic_temp_file), which readers ignore.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>

namespace attnlab::nmt {

// Appends bytes to the file being written; throws attnlab::Error on a write error (disk full).
using ByteSink = std::function<void(const void* data, std::size_t size)>;

// Writes `bytes` to `path` atomically (see above). The folder must exist. Throws attnlab::Error
// naming the path and the failing system call; on any failure the temporary file is removed and
// `path` is left as it was.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes);
// Same, with the content produced by `writer`, which calls the sink as often as it likes. An
// exception from the writer aborts the write (the target is untouched) and is rethrown.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(const ByteSink&)>& writer);

// The temporary name used while writing `path`: ".<name>.tmp-<pid>-<n>" in the same folder.
std::filesystem::path atomic_temp_path(const std::filesystem::path& path);
// True for a name of that form (a leftover of an interrupted write).
bool is_atomic_temp_file(const std::filesystem::path& path);

}  // namespace attnlab::nmt
