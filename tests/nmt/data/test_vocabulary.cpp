#include <algorithm>
#include <filesystem>

#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/io/hash.h"
#include "attnlab/nmt/data/synthetic.h"
#include "attnlab/nmt/data/vocabulary.h"
#include "nmt_test_util.h"

using namespace attnlab::nmt;
using namespace attnlab::nmt::testing;

namespace {

VocabOptions small_options() {
  VocabOptions options;
  options.vocab_size = 300;
  options.seed = 5;
  return options;
}

std::size_t count_models(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) n += entry.path().extension() == ".model";
  return n;
}

}  // namespace

TEST_CASE("Vocabulary trains once and then loads from the cache") {
  TempDir dir("vocab_cache");
  write_synthetic_corpus(dir.file("data"), 400, 10, 10, 1);
  const std::vector<std::string> files = {dir.file("data/train.src"), dir.file("data/train.tgt")};
  const std::string cache = dir.file("cache");

  const Vocabulary first = Vocabulary::train_or_load(files, small_options(), cache);
  CHECK(first.trained());
  CHECK(first.size() == 300);
  CHECK(first.pad_id() == 0);
  CHECK(first.unk_id() == 1);
  CHECK(first.bos_id() == 2);
  CHECK(first.eos_id() == 3);
  CHECK(first.piece(0) == "<pad>");
  CHECK(first.piece(3) == "</s>");
  CHECK(first.model_path() == Vocabulary::cache_path(files, small_options(), cache));
  CHECK(std::filesystem::path(first.model_path()).filename().string().starts_with("spm-"));
  CHECK(first.model_hash() == hash_file(first.model_path()));
  CHECK(count_models(cache) == 1);
  // Nothing but the model is left behind (no temporary files).
  CHECK(std::distance(std::filesystem::directory_iterator(cache), std::filesystem::directory_iterator()) == 1);
  const auto mtime = std::filesystem::last_write_time(first.model_path());

  // Another experiment row with the same data and options: no training, same model.
  const Vocabulary second = Vocabulary::train_or_load(files, small_options(), cache);
  CHECK_FALSE(second.trained());
  CHECK(second.model_path() == first.model_path());
  CHECK(second.model_hash() == first.model_hash());
  CHECK(std::filesystem::last_write_time(second.model_path()) == mtime);

  // The same content elsewhere hits the same cache entry (the key is content, not paths).
  std::filesystem::copy_file(files[0], dir.file("copy.src"));
  std::filesystem::copy_file(files[1], dir.file("copy.tgt"));
  CHECK_FALSE(Vocabulary::train_or_load({dir.file("copy.src"), dir.file("copy.tgt")}, small_options(), cache).trained());

  // Other options make another model.
  VocabOptions other = small_options();
  other.vocab_size = 250;
  const Vocabulary third = Vocabulary::train_or_load(files, other, cache);
  CHECK(third.trained());
  CHECK(third.size() == 250);
  CHECK(count_models(cache) == 2);

  // Training is deterministic: a fresh cache trains the identical model.
  const Vocabulary again = Vocabulary::train_or_load(files, small_options(), dir.file("cache2"));
  CHECK(again.trained());
  CHECK(again.model_hash() == first.model_hash());

  // A damaged cache entry is trained again, not used.
  write_text(first.model_path(), "not a model");
  const Vocabulary repaired = Vocabulary::train_or_load(files, small_options(), cache);
  CHECK(repaired.trained());
  CHECK(repaired.model_hash() == first.model_hash());

  // load() opens a model file directly.
  const Vocabulary loaded = Vocabulary::load(first.model_path());
  CHECK(loaded.model_hash() == first.model_hash());
  CHECK(contains(error_of([&] { Vocabulary::load(dir.file("missing.model")); }), "missing.model"));
  CHECK(contains(error_of([&] { Vocabulary::load(dir.file("data/train.src")); }), "not a SentencePiece model"));
}

TEST_CASE("Vocabulary encode and decode round-trip on both languages") {
  TempDir dir("vocab_roundtrip");
  write_synthetic_corpus(dir.file("data"), 400, 50, 10, 2);
  const Vocabulary vocab = Vocabulary::train_or_load({dir.file("data/train.src"), dir.file("data/train.tgt")},
                                                     small_options(), dir.file("cache"));
  const ParallelCorpus dev = read_parallel(dir.file("data/dev.src"), dir.file("data/dev.tgt"));
  for (std::size_t i = 0; i < dev.size(); ++i) {
    for (const std::string* text : {&dev.src[i], &dev.tgt[i]}) {
      INFO(*text);
      const auto ids = vocab.encode(*text);
      REQUIRE_FALSE(ids.empty());
      for (const auto id : ids) {
        CHECK(id > vocab.eos_id());  // no specials and no <unk> in text from the same language
        CHECK(id < vocab.size());
      }
      CHECK(vocab.decode(ids) == *text);
    }
  }
  // Shared: German-only words are in the same vocabulary as English ones.
  CHECK(vocab.encode("die").size() == 1);
  CHECK(vocab.encode("the").size() == 1);
  // Specials are skipped by decode, unknown characters map to unk.
  auto ids = vocab.encode("the dog");
  ids.insert(ids.begin(), vocab.bos_id());
  ids.push_back(vocab.eos_id());
  ids.push_back(vocab.pad_id());
  CHECK(vocab.decode(ids) == "the dog");
  const auto unknown = vocab.encode("Ω");
  CHECK(std::find(unknown.begin(), unknown.end(), vocab.unk_id()) != unknown.end());
  CHECK(contains(error_of([&] { vocab.decode(std::vector<std::int32_t>{100000}); }), "out of range"));
}

TEST_CASE("Vocabulary reports bad options and unreadable training files") {
  TempDir dir("vocab_errors");
  write_text(dir.file("tiny.txt"), "a b c\n");
  VocabOptions options = small_options();
  options.vocab_size = 5000;
  const std::string message =
      error_of([&] { Vocabulary::train_or_load({dir.file("tiny.txt")}, options, dir.file("cache")); });
  INFO(message);
  CHECK(contains(message, "SentencePiece training failed"));
  CHECK(contains(error_of([&] { Vocabulary::train_or_load({dir.file("absent.txt")}, small_options(), dir.file("cache")); }),
                 "absent.txt"));
  // Nothing was cached by the failures.
  CHECK((!std::filesystem::exists(dir.file("cache")) || std::filesystem::is_empty(dir.file("cache"))));
}
