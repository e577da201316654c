// R-Drop in the trainer (training.rdrop): two dropout passes of every batch and the symmetric
// KL divergence of their predictions, on a tiny model on the synthetic corpus.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attnlab/nmt/checkpoint/checkpoint_store.h"
#include "attnlab/nmt/train/trainer.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;
namespace fs = std::filesystem;

using nmt::testing::final_state;

namespace {

// The tiny experiment of the trainer's tests with every dropout rate set to `dropout` (the
// feed-forward one aside) and R-Drop's weight to `rdrop`.
ExperimentConfig tiny(const fs::path& root, const std::string& run, double dropout, double rdrop) {
  ExperimentConfig c = nmt::testing::tiny_experiment(root, run);
  c.model.dropout.residual = c.model.dropout.embedding = c.model.dropout.attention = dropout;
  c.training.rdrop = rdrop;
  return c;
}

}  // namespace

TEST_CASE("rdrop without dropout trains as training without it") {
  // Without dropout the two passes compute the same predictions: their divergence is 0 up to the
  // last bits of the kernels (which may take other paths for other buffers), and half of each
  // pass's gradient adds up to the one pass's. So the two trainings agree to rounding: measured,
  // every weight and first moment within 7e-5 of its size after 12 steps, but for the key
  // projections' biases, whose gradient is 0 in exact arithmetic (softmax ignores a shift of all
  // of a query's scores), so that Adam scales rounding noise up to full steps there.
  const fs::path root = fs::temp_directory_path() / fmt::format("attnlab-rdrop-same-{}", ::getpid());
  fs::remove_all(root);
  const Registry& registry = nmt::testing::plugins();
  const TrainOptions quiet{.progress = false};
  const TrainResult plain = train(tiny(root, "plain", 0.0, 0.0), registry, quiet);
  const TrainResult rdrop = train(tiny(root, "rdrop", 0.0, 5.0), registry, quiet);
  REQUIRE(plain.dev_ppl.has_value());
  REQUIRE(rdrop.dev_ppl.has_value());
  CHECK(*rdrop.dev_ppl == doctest::Approx(*plain.dev_ppl).epsilon(1e-5));
  const Checkpoint ck = *CheckpointStore(root / "plain", 2).latest().checkpoint;
  const std::size_t n = ck.parameters.size();
  const auto a = final_state(root / "plain"), b = final_state(root / "rdrop");
  REQUIRE(a.size() == 3 * n);  // the parameters, then Adam's first and second moments
  for (std::size_t i = 0; i < 2 * n; ++i) {
    const std::string& name = ck.parameters[i % n].name;
    if (name.find("w_k.bias") != std::string::npos) continue;
    REQUIRE(a[i].size() == b[i].size());
    double worst = 0;
    for (std::size_t k = 0; k < a[i].size(); ++k)
      worst = std::max(worst, std::abs(double(a[i][k]) - double(b[i][k])) / (1e-3 + std::abs(double(a[i][k]))));
    INFO(name, i < n ? "" : " (first moment)");
    CHECK(worst < 1e-3);
  }
  fs::remove_all(root);
}

TEST_CASE("rdrop with dropout changes training and an interrupted run resumes bit-identically") {
  const fs::path root = fs::temp_directory_path() / fmt::format("attnlab-rdrop-resume-{}", ::getpid());
  fs::remove_all(root);
  const Registry& registry = nmt::testing::plugins();
  const TrainOptions quiet{.progress = false};
  const TrainResult plain = train(tiny(root, "plain", 0.3, 0.0), registry, quiet);
  std::vector<std::string> lines;
  const TrainOptions logged{.progress = false, .log = [&](const std::string& line) { lines.push_back(line); }};
  const TrainResult full = train(tiny(root, "full", 0.3, 5.0), registry, logged);
  CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("R-Drop: two dropout passes per batch, alpha 5") != std::string::npos;
  }));
  REQUIRE(full.dev_ppl.has_value());
  CHECK(std::isfinite(*full.dev_ppl));
  // The second pass draws other masks, so the divergence acts and the weights move elsewhere.
  CHECK(final_state(root / "full") != final_state(root / "plain"));
  CHECK(*full.dev_ppl != *plain.dev_ppl);
  TrainOptions crash = quiet;
  crash.stop_after_step = 7;  // its last checkpoint is step 4
  CHECK(train(tiny(root, "resumed", 0.3, 5.0), registry, crash).interrupted);
  CHECK(train(tiny(root, "resumed", 0.3, 5.0), registry, quiet).resumed_from == 4);
  const auto a = final_state(root / "full"), b = final_state(root / "resumed");
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == b[i]);
  fs::remove_all(root);
}
