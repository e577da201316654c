// The bootstrap interval of one system's BLEU: exact percentiles and the expected moments on a
// two-segment set whose resamples take three known values, no spread where every segment is the
// same, the spread shrinking as the set grows, reproducibility per seed, and its errors.
#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/metrics/bootstrap.h"
#include "nmt_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

// Segments of mixed quality: every fourth one exact, the others with one to three words wrong.
std::vector<BleuStats> mixed_segments(int n, const BleuConfig& config) {
  std::vector<BleuStats> stats;
  for (int i = 0; i < n; ++i) {
    const std::string ref = "w" + std::to_string(i) + " the x" + std::to_string(i % 7) + " sat on a y" +
                            std::to_string(i % 5) + " today";
    std::string hyp = ref;
    if (i % 4 >= 1) hyp.replace(0, hyp.find(' '), "v");
    if (i % 4 >= 2) hyp += " again";
    if (i % 4 == 3) hyp.replace(hyp.find(" on "), 4, " in ");
    stats.push_back(sentence_bleu_stats(hyp, {ref}, config));
  }
  return stats;
}

}  // namespace

TEST_CASE("bootstrap interval of two segments has the single segments' scores as its percentiles") {
  const BleuConfig config = BleuConfig::sacrebleu();
  // Every n-gram order matches at least once in both segments, so a resample of two copies of one
  // segment scores what that segment scores alone: the resamples take three values, with
  // probabilities 1/4 (two copies of a), 1/2 (a and b) and 1/4 (two copies of b).
  const BleuStats a = sentence_bleu_stats("the cat sat on the mat", {"the cat sat on the mat"}, config);
  const BleuStats b = sentence_bleu_stats("a b c d e f", {"a b c d x y"}, config);
  const double score_a = compute_bleu(a, config).score;
  const double score_b = compute_bleu(b, config).score;
  BleuStats both = a;
  both += b;
  const double score_ab = compute_bleu(both, config).score;
  CHECK(score_a == doctest::Approx(100.0));
  // b: 4/6, 3/5, 2/4 and 1/3 of its n-grams match, lengths equal.
  CHECK(score_b == doctest::Approx(100.0 * std::pow(4.0 / 6 * 3.0 / 5 * 2.0 / 4 * 1.0 / 3, 0.25)));
  BleuStats twice_b = b;
  twice_b += b;
  CHECK(compute_bleu(twice_b, config).score == doctest::Approx(score_b));

  const int samples = 4000;
  const BootstrapInterval ci = bootstrap_interval({a, b}, config, samples, 3);
  CHECK(ci.samples == samples);
  CHECK(ci.bleu == doctest::Approx(score_ab));
  // A quarter of the sorted resamples are score_b and a quarter 100: the 2.5th and 97.5th
  // percentiles fall inside those runs of equal values.
  CHECK(ci.lower == doctest::Approx(score_b));
  CHECK(ci.upper == doctest::Approx(score_a));
  const double mean = 0.25 * score_a + 0.5 * score_ab + 0.25 * score_b;
  const double sd = std::sqrt(0.25 * (score_a - mean) * (score_a - mean) + 0.5 * (score_ab - mean) * (score_ab - mean) +
                              0.25 * (score_b - mean) * (score_b - mean));
  CHECK(std::abs(ci.mean - mean) < 4.0 * sd / std::sqrt(samples));
  CHECK(ci.stddev == doctest::Approx(sd).epsilon(0.05));
}

TEST_CASE("bootstrap interval has no spread when every segment is the same") {
  const BleuConfig config = BleuConfig::sacrebleu();
  const std::vector<BleuStats> same(30, sentence_bleu_stats("a b c d e f", {"a b c d x y"}, config));
  const BootstrapInterval ci = bootstrap_interval(same, config, 200);
  CHECK(ci.stddev == doctest::Approx(0.0).epsilon(1e-9));
  CHECK(ci.lower == ci.upper);
  CHECK(ci.lower == doctest::Approx(ci.bleu));
  CHECK(ci.mean == doctest::Approx(ci.bleu));
}

TEST_CASE("bootstrap interval narrows as the square root of the set size and repeats for a seed") {
  const BleuConfig config = BleuConfig::sacrebleu();
  const std::vector<BleuStats> set = mixed_segments(60, config);
  std::vector<BleuStats> four_times;
  for (int copy = 0; copy < 4; ++copy) four_times.insert(four_times.end(), set.begin(), set.end());
  const BootstrapInterval small = bootstrap_interval(set, config, 2000, 11);
  const BootstrapInterval large = bootstrap_interval(four_times, config, 2000, 11);
  CHECK(small.bleu == doctest::Approx(large.bleu));
  CHECK(small.stddev > 0.5);
  // Four copies of the set: the resampled score's deviation halves (to within the resampling noise).
  CHECK(large.stddev / small.stddev == doctest::Approx(0.5).epsilon(0.1));
  CHECK(small.lower < small.bleu);
  CHECK(small.bleu < small.upper);
  CHECK(small.lower < small.mean);
  CHECK(small.mean < small.upper);
  // About 3.92 standard deviations between the percentiles of a near-normal spread.
  CHECK((small.upper - small.lower) / small.stddev == doctest::Approx(3.92).epsilon(0.1));

  const BootstrapInterval again = bootstrap_interval(set, config, 2000, 11);
  CHECK(again.mean == small.mean);
  CHECK(again.lower == small.lower);
  CHECK(again.upper == small.upper);
  CHECK(bootstrap_interval(set, config, 2000, 12).mean != small.mean);
}

TEST_CASE("bootstrap interval refuses an empty set and a non-positive sample count") {
  const BleuConfig config = BleuConfig::sacrebleu();
  CHECK(testing::error_of([&] { bootstrap_interval({}, config); }).find("no sentences") != std::string::npos);
  const std::vector<BleuStats> one(1, sentence_bleu_stats("a b", {"a b"}, config));
  const std::string no_samples = testing::error_of([&] { bootstrap_interval(one, config, 0); });
  CHECK(no_samples.find("samples must be positive") != std::string::npos);
}
