// Reading parallel text (plain or gzip through zlib) and length filtering.
#include "attnlab/nmt/data/corpus.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "attnlab/error.h"
#include "attnlab/nmt/io/file_util.h"

namespace attnlab::nmt {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

// Offset of the first byte that is not part of a well-formed UTF-8 sequence, or npos.
std::size_t first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlong forms
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // no overlong forms
      if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
    } else {
      return i;
    }
    if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (i + k >= n || (p[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return std::string_view::npos;
}

class LineCollector {
 public:
  explicit LineCollector(const std::string& path) : path_(path) {}

  void add_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (lines_.empty() && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
    const std::size_t bad = first_invalid_utf8(line);
    if (bad != std::string_view::npos)
      throw_error(fmt::format("read_lines: invalid UTF-8 in '{}' at line {}, byte offset {} (byte 0x{:02x})",
                              path_, lines_.size() + 1, bad,
                              static_cast<unsigned>(static_cast<unsigned char>(line[bad]))));
    lines_.emplace_back(line);
  }
  std::vector<std::string> take() { return std::move(lines_); }

 private:
  const std::string& path_;
  std::vector<std::string> lines_;
};

}  // namespace

bool is_gzip_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  unsigned char magic[2] = {0, 0};
  const std::size_t got = std::fread(magic, 1, 2, file);
  std::fclose(file);
  return got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::error_code ec;
  ATTNLAB_CHECK(std::filesystem::exists(path, ec), "read_lines: file '{}' does not exist", path);
  ATTNLAB_CHECK(!std::filesystem::is_directory(path, ec), "read_lines: '{}' is a directory, not a file",
                path);
  // zlib reads gzip streams and, transparently, plain files; is_gzip_file() only names the
  // format in error messages.
  errno = 0;
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  ATTNLAB_CHECK(file != nullptr, "read_lines: cannot open '{}': {}", path,
                errno != 0 ? std::strerror(errno) : "out of memory");
  gzbuffer(file.get(), 1 << 17);

  LineCollector lines(path);
  std::string pending;  // bytes of an unfinished line
  std::vector<char> chunk(1 << 20);
  while (true) {
    const int got = gzread(file.get(), chunk.data(), static_cast<unsigned>(chunk.size()));
    int code = Z_OK;
    const char* message = gzerror(file.get(), &code);
    if (got < 0 || (code != Z_OK && code != Z_STREAM_END))
      throw_error(fmt::format("read_lines: error reading '{}'{}: {}", path,
                              is_gzip_file(path) ? " (gzip)" : "",
                              code == Z_ERRNO ? std::strerror(errno) : message));
    if (got == 0) break;
    std::string_view data(chunk.data(), static_cast<std::size_t>(got));
    std::size_t start = 0;
    while (true) {
      const std::size_t nl = data.find('\n', start);
      if (nl == std::string_view::npos) {
        pending.append(data.substr(start));
        break;
      }
      if (pending.empty()) {
        lines.add_line(data.substr(start, nl - start));
      } else {
        pending.append(data.substr(start, nl - start));
        lines.add_line(pending);
        pending.clear();
      }
      start = nl + 1;
    }
  }
  if (!pending.empty()) lines.add_line(pending);
  return lines.take();
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) {
    ATTNLAB_CHECK(line.find('\n') == std::string::npos, "write_lines: a line for '{}' contains a newline", path);
    text += line;
    text += '\n';
  }
  if (!path.ends_with(".gz")) {
    detail::write_file_atomic(path, text);
    return;
  }
  z_stream z{};
  ATTNLAB_CHECK(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
                "write_lines: cannot start gzip compression for '{}'", path);
  std::string packed(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(text.data());
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(packed.data());
  z.avail_out = static_cast<uInt>(packed.size());
  const int rc = deflate(&z, Z_FINISH);
  packed.resize(z.total_out);
  deflateEnd(&z);
  ATTNLAB_CHECK(rc == Z_STREAM_END, "write_lines: gzip compression of '{}' failed ({})", path, rc);
  detail::write_file_atomic(path, packed);
}

ParallelCorpus read_parallel(const std::string& src_path, const std::string& tgt_path) {
  ParallelCorpus corpus;
  corpus.src = read_lines(src_path);
  corpus.tgt = read_lines(tgt_path);
  ATTNLAB_CHECK(corpus.src.size() == corpus.tgt.size(),
                "read_parallel: line counts differ: source '{}' has {} lines, target '{}' has {} lines",
                src_path, corpus.src.size(), tgt_path, corpus.tgt.size());
  ATTNLAB_CHECK(!corpus.src.empty(), "read_parallel: empty corpus: '{}' and '{}' have no lines", src_path,
                tgt_path);
  corpus.src_path = src_path;
  corpus.tgt_path = tgt_path;
  return corpus;
}

std::size_t count_whitespace_tokens(std::string_view text) {
  std::size_t count = 0;
  bool in_token = false;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    if (!space && !in_token) ++count;
    in_token = !space;
  }
  return count;
}

std::string FilterStats::str(std::size_t max_tokens, double max_ratio) const {
  return fmt::format("kept {} of {} pairs; dropped {}: {} empty, {} too long ({}), {} length ratio ({})", kept,
                     kept + dropped(), dropped(), empty, too_long,
                     max_tokens == 0 ? std::string("no limit") : fmt::format("> {} tokens", max_tokens), ratio,
                     max_ratio > 0 ? fmt::format("> {}", max_ratio) : std::string("no limit"));
}

FilterStats filter_by_length(ParallelCorpus& corpus, std::size_t max_tokens, double max_ratio) {
  ATTNLAB_CHECK(corpus.src.size() == corpus.tgt.size(),
                "filter_by_length: source has {} segments but target has {}", corpus.src.size(),
                corpus.tgt.size());
  FilterStats stats;
  std::size_t out = 0;
  for (std::size_t i = 0; i < corpus.src.size(); ++i) {
    const std::size_t a = count_whitespace_tokens(corpus.src[i]);
    const std::size_t b = count_whitespace_tokens(corpus.tgt[i]);
    if (a == 0 || b == 0) {
      ++stats.empty;
      continue;
    }
    if (max_tokens > 0 && (a > max_tokens || b > max_tokens)) {
      ++stats.too_long;
      continue;
    }
    if (max_ratio > 0 &&
        static_cast<double>(std::max(a, b)) > max_ratio * static_cast<double>(std::min(a, b))) {
      ++stats.ratio;
      continue;
    }
    if (out != i) {
      corpus.src[out] = std::move(corpus.src[i]);
      corpus.tgt[out] = std::move(corpus.tgt[i]);
    }
    ++out;
  }
  corpus.src.resize(out);
  corpus.tgt.resize(out);
  stats.kept = out;
  return stats;
}

}  // namespace attnlab::nmt
