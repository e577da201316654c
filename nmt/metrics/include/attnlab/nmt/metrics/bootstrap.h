#pragma once
// Bootstrap resampling of corpus BLEU (Koehn 2004): how much of one system's score is the choice of
// sentences (bootstrap_interval), and is one system's BLEU reliably above or below another's on the
// same sentences (paired_bootstrap)?
#include <cstdint>
#include <vector>

#include "attnlab/nmt/metrics/bleu.h"

namespace attnlab::nmt {

// `base` and `system` hold per-sentence BLEU statistics of the same sentences. Draws `samples`
// resamples of the sentence indices (with replacement, std::mt19937_64 seeded with `seed`,
// so the result is reproducible), computes corpus BLEU of both systems on each from the
// summed statistics, and counts the samples where the system does NOT score higher than the base.
// p_value = that count / samples: small when the system is reliably better; for identical systems
// every sample ties, so p_value = 1.
struct BootstrapResult {
  double base_bleu = 0.0;    // on the full set
  double system_bleu = 0.0;  // on the full set
  double p_value = 1.0;
  // The mirror share: samples where the system does NOT score lower than the base (small when the
  // system is reliably worse). Two-sided at 5 %: min(p_value, p_worse) < 0.025.
  double p_worse = 1.0;
  int samples = 0;
};
BootstrapResult paired_bootstrap(const std::vector<BleuStats>& base, const std::vector<BleuStats>& system,
                                 const BleuConfig& config, int samples = 1000, std::uint64_t seed = 12345);

// One system's BLEU over `samples` resamples of its sentences (with replacement, the same generator
// and seed convention as paired_bootstrap): the spread a score would show on another test set of
// the same size and kind. The percentiles interpolate linearly between the sorted resampled scores.
struct BootstrapInterval {
  double bleu = 0.0;    // on the full set
  double mean = 0.0;    // of the resampled scores
  double stddev = 0.0;  // of the resampled scores (divided by samples - 1; 0 for one sample)
  double lower = 0.0;   // their 2.5th percentile
  double upper = 0.0;   // their 97.5th percentile
  int samples = 0;
};
BootstrapInterval bootstrap_interval(const std::vector<BleuStats>& stats, const BleuConfig& config,
                                     int samples = 1000, std::uint64_t seed = 12345);

}  // namespace attnlab::nmt
