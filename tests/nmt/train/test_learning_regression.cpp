// What the whole pipeline reaches, sized for CI: data, vocabulary, batching, the model, Adam with
// its schedule, label smoothing, dropout, checkpoints, then beam search and BLEU, on the synthetic
// corpus in well under a minute. A change that quietly hurts learning anywhere on that path (a
// schedule, a scaling, a mask, the decoder) lowers what it reaches and fails here before it lands.
// The bounds cover the spread over seeds and OpenBLAS's kernels (tools/training_spread.sh,
// docs/results/training-spread.md).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/decode/translator.h"
#include "attnlab/nmt/eval/evaluation.h"
#include "attnlab/nmt/train/trainer.h"
#include "copy_task.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;
namespace fs = std::filesystem;

namespace {

// A small quickstart: 2 + 2 layers of width 64 on 4000 synthetic pairs, 500 steps of 1024 tokens.
ExperimentConfig small_quickstart(const fs::path& root, std::uint64_t seed) {
  const std::string toml = R"([experiment]
name = "learning-regression"
seed = )" + std::to_string(seed) + R"(
[data]
cache_dir = "cache"
max_length = 64
[data.synthetic]
train_pairs = 4000
dev_pairs = 200
test_pairs = 200
seed = 1
[vocab]
size = 400
[model]
encoder_layers = 2
decoder_layers = 2
d_model = 64
heads = 4
d_ff = 256
dropout = 0.1
[training]
batch_tokens = 1024
max_steps = 500
warmup_steps = 150
lr_scale = 0.5
label_smoothing = 0.1
eval_every = 500
log_every = 100
checkpoint_every = 500
keep_checkpoints = 1
[eval]
beam = 4
alpha = 0.6
)";
  ExperimentConfig c = parse_experiment(toml, (root / "learning-regression.toml").string());
  c.run_dir = (root / "run").string();
  return c;
}

// One seed's outcome spreads widely (test BLEU 67 .. 84 over 64 runs), so the test bounds each seed
// loosely and the mean of three seeds more tightly.
struct Outcome {
  double dev_ppl = 0.0;
  double bleu = 0.0;
};

Outcome train_and_translate(std::uint64_t seed) {
  const fs::path root = fs::temp_directory_path() / ("attnlab-learning-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const ExperimentConfig config = small_quickstart(root, seed);
  const TrainResult trained = train(config, nmt::testing::plugins(), TrainOptions{.progress = false, .log = [](const std::string&) {}});
  REQUIRE(trained.dev_ppl.has_value());
  LoadedModel loaded = load_model(config.run_dir, nmt::testing::plugins());
  const std::string corpus = synthetic_corpus_dir(config);
  const Evaluation test = evaluate_model(loaded, corpus + "/test.src", corpus + "/test.tgt", config.eval);
  MESSAGE("learning regression seed " << seed << ": dev ppl " << *trained.dev_ppl << ", test BLEU " << test.bleu.score
                                      << " (" << trained.seconds << " s of training)");
  fs::remove_all(root);
  return {*trained.dev_ppl, test.bleu.score};
}

}  // namespace

TEST_CASE("the synthetic corpus trains to its measured dev perplexity and test BLEU" * doctest::test_suite("training")) {
  constexpr int kSeeds = 3;
  for (int repeat = 0; repeat < nmt::testing::training_repeats(); ++repeat) {
    Outcome mean;
    for (int i = 0; i < kSeeds; ++i) {
      const auto seed = static_cast<std::uint64_t>(1 + repeat * kSeeds + i);
      CAPTURE(seed);
      const Outcome one = train_and_translate(seed);
      // Measured per seed over kernels and seeds: dev ppl 1.21 .. 1.36, BLEU 67.2 .. 84.3.
      CHECK(one.dev_ppl < 1.6);
      CHECK(one.bleu > 55.0);
      mean.dev_ppl += one.dev_ppl / kSeeds;
      mean.bleu += one.bleu / kSeeds;
    }
    MESSAGE("learning regression seeds " << 1 + repeat * kSeeds << ".." << (repeat + 1) * kSeeds << ": mean dev ppl "
                                         << mean.dev_ppl << ", mean test BLEU " << mean.bleu);
    // Measured: see docs/results/training-spread.md.
    CHECK(mean.dev_ppl < 1.38);
    CHECK(mean.bleu > 68.0);
  }
}
