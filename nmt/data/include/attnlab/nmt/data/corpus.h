#pragma once
// Parallel text: reading line-aligned source and target files (plain text or gzip) and dropping
// pairs by length. Every reader either returns all the data or throws attnlab::Error; it never
// returns part of a file.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::nmt {

struct ParallelCorpus {
  std::vector<std::string> src;  // one segment per line, without the line ending
  std::vector<std::string> tgt;  // same size as src
  std::string src_path;          // where they were read from (empty when built in memory)
  std::string tgt_path;
  std::size_t size() const { return src.size(); }
};

// True when the file starts with the gzip magic bytes 1f 8b.
bool is_gzip_file(const std::string& path);

// Reads every line of a plain-text or gzip file (detected by its magic bytes, so the extension
// does not matter). Lines end at LF; a trailing CR is stripped (CRLF files read like LF files), a
// UTF-8 byte-order mark at the start of the file is dropped, and a last line without LF counts.
// Every line must be valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
// Throws attnlab::Error naming the file for: a missing or unreadable file, a corrupt or truncated
// gzip stream, and invalid UTF-8 (with the 1-based line number and the 0-based byte offset of
// the first bad byte within that line).
std::vector<std::string> read_lines(const std::string& path);

// Writes one line per element, each ending in LF, atomically (temporary file, fsync, rename);
// gzip-compressed when the path ends in ".gz". read_lines() reads it back unchanged.
void write_lines(const std::string& path, const std::vector<std::string>& lines);

// Reads a line-aligned pair of files. Throws attnlab::Error for everything read_lines() refuses,
// when the line counts differ (naming both files and both counts) and when the corpus is empty.
ParallelCorpus read_parallel(const std::string& src_path, const std::string& tgt_path);

// What filter_by_length() dropped. Each dropped pair counts once, under the first rule it fails,
// in the order empty, too_long, ratio.
struct FilterStats {
  std::size_t kept = 0;
  std::size_t empty = 0;     // a side has no token
  std::size_t too_long = 0;  // a side has more than max_tokens tokens
  std::size_t ratio = 0;     // longer side / shorter side > max_ratio
  std::size_t dropped() const { return empty + too_long + ratio; }
  // "kept 28990 of 29000 pairs; dropped 10: 2 empty, 7 too long (> 100 tokens), 1 length ratio (> 1.5)"
  std::string str(std::size_t max_tokens, double max_ratio) const;
};

// Number of whitespace-separated tokens (space, tab, vertical tab, form feed, CR, LF).
std::size_t count_whitespace_tokens(std::string_view text);

// Drops pairs in place, keeping the order of the rest. Lengths are whitespace tokens (counted
// before subword segmentation, so the filter runs before a vocabulary exists; subword lengths
// are a small multiple of these). max_tokens == 0 disables the length rule, max_ratio <= 0
// disables the ratio rule; empty pairs are always dropped.
FilterStats filter_by_length(ParallelCorpus& corpus, std::size_t max_tokens, double max_ratio);

}  // namespace attnlab::nmt
