#include "attnlab/nmt/data/prepared_data.h"

#include <filesystem>

#include "attnlab/error.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/io/hash.h"
#include "attnlab/nmt/data/synthetic.h"

namespace attnlab::nmt {
namespace {
namespace fs = std::filesystem;
}

std::string synthetic_corpus_dir(const ExperimentConfig& c) {
  const auto& s = c.data.synth;
  return (fs::path(c.data.cache_dir) /
          fmt::format("synthetic-{}-{}-{}-{}", s.seed, s.train_pairs, s.dev_pairs, s.test_pairs))
      .string();
}

PreparedData prepare_data(const ExperimentConfig& c, const std::function<void(const std::string&)>& log) {
  PreparedData out;
  const DataConfig& d = c.data;
  fs::create_directories(d.cache_dir);
  if (d.synthetic) {
    const std::string dir = synthetic_corpus_dir(c);
    if (!fs::exists(fs::path(dir) / "test.tgt")) {
      write_synthetic_corpus(dir, static_cast<std::size_t>(d.synth.train_pairs), static_cast<std::size_t>(d.synth.dev_pairs),
                             static_cast<std::size_t>(d.synth.test_pairs), d.synth.seed);
      log(fmt::format("data: wrote the synthetic corpus ({} / {} / {} pairs) to {}", d.synth.train_pairs,
                      d.synth.dev_pairs, d.synth.test_pairs, dir));
    }
    auto at = [&](const char* name) { return (fs::path(dir) / name).string(); };
    out.train_source = at("train.src"), out.train_target = at("train.tgt");
    out.dev_source = at("dev.src"), out.dev_target = at("dev.tgt");
    out.test_source = at("test.src"), out.test_target = at("test.tgt");
  } else {
    out.train_source = d.train_source, out.train_target = d.train_target;
    out.dev_source = d.dev_source, out.dev_target = d.dev_target;
    out.test_source = d.test_source, out.test_target = d.test_target;
  }

  VocabOptions vocab_options;
  vocab_options.vocab_size = static_cast<int>(c.vocab.size);
  vocab_options.model_type = c.vocab.model_type;
  out.vocab = Vocabulary::train_or_load({out.train_source, out.train_target}, vocab_options, d.cache_dir);
  log(fmt::format("vocabulary: {} pieces, {} ({})", out.vocab.size(), out.vocab.trained() ? "trained" : "from the cache",
                  out.vocab.model_path()));

  const std::string filter = fmt::format("max_length={};ratio={}", d.max_length, d.max_length_ratio);
  EncodedCacheInfo info;
  auto train = load_or_encode(
      d.cache_dir, hash_files({out.train_source, out.train_target}, filter), out.vocab,
      [&] {
        ParallelCorpus corpus = read_parallel(out.train_source, out.train_target);
        const FilterStats stats = filter_by_length(corpus, static_cast<std::size_t>(d.max_length), d.max_length_ratio);
        log("train: " + stats.str(static_cast<std::size_t>(d.max_length), d.max_length_ratio));
        return corpus;
      },
      &info);
  out.train = std::make_shared<const EncodedCorpus>(std::move(train));
  ATTNLAB_CHECK(out.train->size() > 0,
                "no training pairs: every pair of '{}' / '{}' was left out by the length filter (data.max_length = {}, "
                "data.max_length_ratio = {})", out.train_source, out.train_target, d.max_length, d.max_length_ratio);
  log(fmt::format("train: {} pairs, {} source and {} target pieces ({})", out.train->size(),
                  out.train->src_token_count(), out.train->tgt_token_count(),
                  info.hit ? "encoded cache" : "encoded now: " + info.miss_reason));

  if (!out.dev_source.empty()) {
    auto dev = load_or_encode(d.cache_dir, hash_files({out.dev_source, out.dev_target}, "dev"), out.vocab,
                              [&] { return read_parallel(out.dev_source, out.dev_target); });
    out.dev = std::make_shared<const EncodedCorpus>(std::move(dev));
    log(fmt::format("dev: {} pairs, {} target pieces", out.dev->size(), out.dev->tgt_token_count()));
  }
  return out;
}

}  // namespace attnlab::nmt
