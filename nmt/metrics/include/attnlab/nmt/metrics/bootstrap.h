#pragma once
// Paired bootstrap resampling of corpus BLEU (Koehn 2004): is one system's BLEU reliably above or
// below another's on the same sentences?
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

}  // namespace attnlab::nmt
