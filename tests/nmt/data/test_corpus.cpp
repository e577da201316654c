#include <filesystem>

#include "attnlab/error.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/io/hash.h"
#include "nmt_test_util.h"

using namespace attnlab::nmt;
using namespace attnlab::nmt::testing;

TEST_CASE("read_parallel reads plain text and strips carriage returns") {
  TempDir dir("corpus_plain");
  write_text(dir.file("a.en"), "\xEF\xBB\xBFhello world\r\nsecond line\r\n\nlast without newline");
  write_text(dir.file("a.de"), "hallo welt\nzweite zeile\nleer\nletzte");
  const ParallelCorpus corpus = read_parallel(dir.file("a.en"), dir.file("a.de"));
  REQUIRE(corpus.size() == 4);
  CHECK(corpus.src[0] == "hello world");
  CHECK(corpus.src[1] == "second line");
  CHECK(corpus.src[2].empty());
  CHECK(corpus.src[3] == "last without newline");
  CHECK(corpus.tgt[3] == "letzte");
  CHECK(corpus.src_path == dir.file("a.en"));
}

TEST_CASE("read_parallel reads gzip files like plain ones") {
  TempDir dir("corpus_gzip");
  std::vector<std::string> lines;
  for (int i = 0; i < 5000; ++i) lines.push_back("Zeile nummer " + std::to_string(i) + " mit Umlauten äöü ß");
  write_lines(dir.file("plain.de"), lines);
  write_lines(dir.file("packed.de.gz"), lines);
  write_text(dir.file("no_extension"), read_bytes(dir.file("packed.de.gz")));
  CHECK(read_bytes(dir.file("packed.de.gz")).size() < read_bytes(dir.file("plain.de")).size() / 3);
  CHECK(is_gzip_file(dir.file("packed.de.gz")));
  CHECK(is_gzip_file(dir.file("no_extension")));
  CHECK_FALSE(is_gzip_file(dir.file("plain.de")));
  const ParallelCorpus corpus = read_parallel(dir.file("plain.de"), dir.file("packed.de.gz"));
  REQUIRE(corpus.size() == 5000);
  CHECK(corpus.src == lines);
  CHECK(corpus.tgt == lines);
  CHECK(read_lines(dir.file("no_extension")) == corpus.src);
  CHECK(corpus.src[4999] == "Zeile nummer 4999 mit Umlauten äöü ß");
}

TEST_CASE("read_lines reports a truncated gzip file") {
  TempDir dir("corpus_gzip_cut");
  std::vector<std::string> lines;
  for (int i = 0; i < 20000; ++i) lines.push_back("line " + std::to_string(i * 7919 % 10007));
  write_lines(dir.file("full.gz"), lines);
  CHECK(read_lines(dir.file("full.gz")) == lines);
  const std::string packed = read_bytes(dir.file("full.gz"));
  write_text(dir.file("cut.gz"), std::string_view(packed).substr(0, packed.size() / 2));
  const std::string message = error_of([&] { read_lines(dir.file("cut.gz")); });
  CHECK(contains(message, "cut.gz"));
  CHECK(contains(message, "gzip"));
}

TEST_CASE("read_parallel names both files and both counts when line counts differ") {
  TempDir dir("corpus_counts");
  write_text(dir.file("s.en"), "a\nb\nc\n");
  write_text(dir.file("t.de"), "a\nb\n");
  const std::string message = error_of([&] { read_parallel(dir.file("s.en"), dir.file("t.de")); });
  INFO(message);
  CHECK(contains(message, "line counts differ"));
  CHECK(contains(message, dir.file("s.en") + "' has 3 lines"));
  CHECK(contains(message, dir.file("t.de") + "' has 2 lines"));
  CHECK_THROWS_AS(read_parallel(dir.file("s.en"), dir.file("t.de")), attnlab::Error);
}

TEST_CASE("read_lines reports invalid UTF-8 with the file and line and byte offset") {
  TempDir dir("corpus_utf8");
  write_text(dir.file("bad.en"), "fine\nalso fine äö\nab\xff" "cd\nmore\n");
  const std::string message = error_of([&] { read_lines(dir.file("bad.en")); });
  INFO(message);
  CHECK(contains(message, "invalid UTF-8"));
  CHECK(contains(message, dir.file("bad.en")));
  CHECK(contains(message, "line 3, byte offset 2"));
  CHECK(contains(message, "0xff"));

  // The same through read_parallel, on the target side, and other malformed sequences.
  write_text(dir.file("good.en"), "a\nb\n");
  const char* bad_sequences[] = {"\xC0\xAF",          // overlong '/'
                                 "\xED\xA0\x80",      // UTF-16 surrogate
                                 "\xF4\x90\x80\x80",  // past U+10FFFF
                                 "\xE2\x82",          // truncated sequence
                                 "\x80"};             // stray continuation byte
  for (const char* bad : bad_sequences) {
    write_text(dir.file("bad.de"), std::string("ok\nx") + bad + "\n");
    const std::string m = error_of([&] { read_parallel(dir.file("good.en"), dir.file("bad.de")); });
    INFO(m);
    CHECK(contains(m, "bad.de' at line 2, byte offset 1"));
  }
  // Valid multi-byte text passes.
  write_text(dir.file("ok.de"), "€ 𝄞 ß\nok\n");
  CHECK(read_lines(dir.file("ok.de")).size() == 2);
}

TEST_CASE("read_parallel refuses an empty corpus") {
  TempDir dir("corpus_empty");
  write_text(dir.file("e.en"), "");
  write_text(dir.file("e.de"), "");
  const std::string message = error_of([&] { read_parallel(dir.file("e.en"), dir.file("e.de")); });
  INFO(message);
  CHECK(contains(message, "empty corpus"));
  CHECK(contains(message, dir.file("e.en")));
}

TEST_CASE("read_lines names a missing file") {
  TempDir dir("corpus_missing");
  write_text(dir.file("here.en"), "x\n");
  const std::string message = error_of([&] { read_parallel(dir.file("here.en"), dir.file("gone.de")); });
  INFO(message);
  CHECK(contains(message, dir.file("gone.de")));
  CHECK(contains(message, "does not exist"));
}

TEST_CASE("filter_by_length drops empty and long and unbalanced pairs and counts them") {
  ParallelCorpus corpus;
  corpus.src = {"a b c", "", "one two", "x", "w w w w w w", "k l m", "p q"};
  corpus.tgt = {"a b", "x", "  ", "y y y y", "w", "k l m n o p q", "r s"};
  const FilterStats stats = filter_by_length(corpus, 5, 2.0);
  CHECK(stats.empty == 2);
  CHECK(stats.too_long == 2);
  CHECK(stats.ratio == 1);
  CHECK(stats.kept == 2);
  CHECK(stats.dropped() == 5);
  CHECK(corpus.src == std::vector<std::string>{"a b c", "p q"});
  CHECK(corpus.tgt == std::vector<std::string>{"a b", "r s"});
  const std::string text = stats.str(5, 2.0);
  INFO(text);
  CHECK(contains(text, "kept 2 of 7 pairs"));
  CHECK(contains(text, "2 too long"));
  CHECK(count_whitespace_tokens(" a\tb  c \n") == 3);
}

TEST_CASE("hashes are stable lowercase hex of the content") {
  TempDir dir("hash");
  CHECK(hash_bytes("").size() == 32);
  CHECK(hash_bytes("abc") == hash_bytes("abc"));
  CHECK(hash_bytes("abc") != hash_bytes("abd"));
  const std::string h = hash_bytes("attnlab");
  CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
  std::string big(3 << 20, 'x');  // spans several read chunks
  big[12345] = 'y';
  write_text(dir.file("big"), big);
  write_text(dir.file("copy"), big);
  CHECK(hash_file(dir.file("big")) == hash_bytes(big));
  CHECK(hash_files({dir.file("big")}, "s") == hash_files({dir.file("copy")}, "s"));
  CHECK(hash_files({dir.file("big")}, "s") != hash_files({dir.file("big")}, "t"));
  CHECK(hash_files({dir.file("big"), dir.file("copy")}, "") != hash_files({dir.file("big")}, ""));
  CHECK(contains(error_of([&] { hash_file(dir.file("nope")); }), "nope"));
}

TEST_CASE("read_parallel reads the real Multi30k training set") {
  const std::filesystem::path root = ATTNLAB_TEST_SHARED_DATA;
  const auto en = root / "multi30k" / "raw" / "train.en";
  const auto de = root / "multi30k" / "raw" / "train.de";
  if (!std::filesystem::exists(en) || !std::filesystem::exists(de)) {
    MESSAGE("skipped: " << en.string() << " is not there");
    return;
  }
  ParallelCorpus corpus = read_parallel(en.string(), de.string());
  CHECK(corpus.size() == 29000);
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    if (!corpus.src[i].empty() && corpus.src[i].back() == '\r') FAIL("carriage return left at line " << i + 1);
  }
  const FilterStats stats = filter_by_length(corpus, 100, 0);
  MESSAGE("Multi30k train: " << stats.str(100, 0));
  CHECK(stats.kept + stats.dropped() == 29000);
  CHECK(stats.kept > 28900);
}
