#pragma once
// Content hashes for caches: xxHash XXH3-128, written as 32 lowercase hex digits. They identify
// data by content (not by path or time), so a moved file keeps its cache entries and a changed one
// never reuses them. Not cryptographic: they guard against accidents, not adversaries.
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::nmt {

// Hash of a byte buffer.
std::string hash_bytes(std::string_view bytes);

// Hash of a file's raw bytes (compressed bytes for a .gz file), read in chunks. Throws
// attnlab::Error naming the file when it cannot be opened or read.
std::string hash_file(const std::string& path);

// A cache key: the content hashes of `paths` in the given order (their names do not count) and a
// settings string (e.g. options that change the derived data). Same contents, same order and
// same settings give the same key.
std::string hash_files(const std::vector<std::string>& paths, std::string_view settings);

}  // namespace attnlab::nmt
