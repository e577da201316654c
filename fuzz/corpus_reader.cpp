// Fuzzes the parallel-text reader. The input is a source file, a 0xFF byte (never part of UTF-8
// text), then a target file: the pair goes through read_parallel (read_lines on each) and the
// length filter. Without a 0xFF byte the whole input is one file for read_lines. Either file may
// be gzip (the reader tells by the magic bytes).
#include <algorithm>
#include <cstdlib>

#include "attnlab/nmt/data/corpus.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnlab;
  const std::string_view input = fuzz::as_text(data, size);
  const std::size_t split = input.find('\xff');
  const std::string src = fuzz::write_input("corpus.src", input.substr(0, split)).string();
  if (split == std::string_view::npos) {
    fuzz::expect_errors([&] { (void)nmt::read_lines(src); });
    return 0;
  }
  const std::string tgt = fuzz::write_input("corpus.tgt", input.substr(split + 1)).string();
  fuzz::expect_errors([&] {
    nmt::ParallelCorpus corpus = nmt::read_parallel(src, tgt);
    const std::size_t max_tokens = std::max<std::size_t>(1, size % 16);
    nmt::FilterStats stats = nmt::filter_by_length(corpus, max_tokens, 1.5);
    if (stats.kept != corpus.size() || corpus.src.size() != corpus.tgt.size()) std::abort();
    (void)stats.str(max_tokens, 1.5);
  });
  return 0;
}
