#include <filesystem>

#include "attnlab/nmt/data/encoded.h"
#include "attnlab/nmt/io/hash.h"
#include "attnlab/nmt/data/synthetic.h"
#include "nmt_test_util.h"

using namespace attnlab::nmt;
using namespace attnlab::nmt::testing;

namespace {

struct Fixture {
  TempDir dir{"encoded"};
  std::string src, tgt, cache;
  Vocabulary vocab;
  std::string corpus_key;
  int reads = 0;

  Fixture() {
    write_synthetic_corpus(dir.file("data"), 300, 10, 10, 4);
    src = dir.file("data/train.src");
    tgt = dir.file("data/train.tgt");
    cache = dir.file("cache");
    VocabOptions options;
    options.vocab_size = 260;
    vocab = Vocabulary::train_or_load({src, tgt}, options, dir.file("vocab"));
    corpus_key = hash_files({src, tgt}, "no filter");
  }
  EncodedCorpus load(EncodedCacheInfo* info) {
    return load_or_encode(cache, corpus_key, vocab, [this] {
      ++reads;
      return read_parallel(src, tgt);
    }, info);
  }
};

}  // namespace

TEST_CASE("EncodedCorpus holds the ids of every pair") {
  Fixture f;
  const ParallelCorpus corpus = read_parallel(f.src, f.tgt);
  const EncodedCorpus encoded = EncodedCorpus::encode(corpus, f.vocab);
  REQUIRE(encoded.size() == corpus.size());
  std::size_t src_total = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const auto x = encoded.src(i);
    const auto y = encoded.tgt(i);
    CHECK(std::vector<std::int32_t>(x.begin(), x.end()) == f.vocab.encode(corpus.src[i]));
    CHECK(f.vocab.decode(std::vector<std::int32_t>(y.begin(), y.end())) == corpus.tgt[i]);
    CHECK(encoded.src_length(i) == x.size());
    src_total += x.size();
  }
  CHECK(encoded.src_token_count() == src_total);
}

TEST_CASE("the encoded cache round-trips and is reused") {
  Fixture f;
  EncodedCacheInfo info;
  const EncodedCorpus built = f.load(&info);
  CHECK_FALSE(info.hit);
  CHECK(contains(info.miss_reason, "missing"));
  CHECK(f.reads == 1);
  CHECK(std::filesystem::exists(info.path));
  CHECK(std::filesystem::path(info.path).filename().string().starts_with("enc-"));
  CHECK(std::distance(std::filesystem::directory_iterator(f.cache), std::filesystem::directory_iterator()) == 1);

  const EncodedCorpus cached = f.load(&info);
  CHECK(info.hit);
  CHECK(f.reads == 1);  // the text was not read again
  CHECK(cached == built);
  CHECK(cached == EncodedCorpus::encode(read_parallel(f.src, f.tgt), f.vocab));

  // Another corpus key (e.g. other filter settings) or another vocabulary is another entry.
  const std::string key = encoded_cache_key(f.corpus_key, f.vocab);
  CHECK(key != encoded_cache_key(hash_files({f.src, f.tgt}, "max_tokens=5"), f.vocab));
  std::string why;
  CHECK_FALSE(EncodedCorpus::load(info.path, hash_bytes("other"), &why).has_value());
  CHECK(contains(why, "does not match"));
}

TEST_CASE("a truncated or corrupted encoded cache is detected and rebuilt") {
  Fixture f;
  EncodedCacheInfo info;
  const EncodedCorpus built = f.load(&info);
  const std::string path = info.path;
  const std::string good = read_bytes(path);
  const std::string key = encoded_cache_key(f.corpus_key, f.vocab);

  struct Damage {
    const char* name;
    std::string bytes;
    const char* reason;
  };
  std::string flipped_payload = good;
  flipped_payload[good.size() - 3] ^= 0x01;
  std::string flipped_count = good;
  flipped_count[48] ^= 0x01;  // the pair count in the header
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  std::string bad_version = good;
  bad_version[8] = 9;
  const Damage damages[] = {
      {"truncated payload", good.substr(0, good.size() - 10), "truncated"},
      {"truncated header", good.substr(0, 40), "truncated"},
      {"empty file", "", "truncated"},
      {"flipped payload bit", flipped_payload, "checksum mismatch"},
      {"flipped header count", flipped_count, "disagrees"},
      {"bad magic", bad_magic, "bad magic"},
      {"other version", bad_version, "version 9"},
      {"trailing garbage", good + "xx", "expected"},
  };
  for (const Damage& d : damages) {
    INFO(d.name);
    write_text(path, d.bytes);
    std::string why;
    CHECK_FALSE(EncodedCorpus::load(path, key, &why).has_value());
    INFO(why);
    CHECK(contains(why, d.reason));
    const int reads = f.reads;
    const EncodedCorpus rebuilt = f.load(&info);
    CHECK_FALSE(info.hit);
    CHECK(contains(info.miss_reason, d.reason));
    CHECK(f.reads == reads + 1);
    CHECK(rebuilt == built);
    CHECK(read_bytes(path) == good);  // the rebuilt file is the original one again
  }
}

TEST_CASE("EncodedCorpus save and load keep empty sequences") {
  TempDir dir("encoded_small");
  EncodedCorpus corpus;
  corpus.add(std::vector<std::int32_t>{5, 6, 7}, std::vector<std::int32_t>{});
  corpus.add(std::vector<std::int32_t>{}, std::vector<std::int32_t>{9});
  const std::string key = hash_bytes("k");
  corpus.save(dir.file("c.bin"), key);
  const auto loaded = EncodedCorpus::load(dir.file("c.bin"), key);
  REQUIRE(loaded.has_value());
  CHECK(*loaded == corpus);
  CHECK(loaded->size() == 2);
  CHECK(loaded->tgt_length(0) == 0);
  CHECK(loaded->tgt(1)[0] == 9);
  CHECK(contains(error_of([&] { corpus.save(dir.file("d.bin"), "short"); }), "32 hex digits"));
}
