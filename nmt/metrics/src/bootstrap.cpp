#include "attnlab/nmt/metrics/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "attnlab/error.h"

namespace attnlab::nmt {
namespace {

BleuStats sum_all(const std::vector<BleuStats>& v) {
  BleuStats total;
  for (const auto& s : v) total += s;
  return total;
}

BleuStats sum_at(const std::vector<BleuStats>& v, const std::vector<std::size_t>& idx) {
  BleuStats total;
  for (const std::size_t i : idx) total += v[i];
  return total;
}

// One resample: n indices drawn uniformly with replacement.
void draw(std::vector<std::size_t>& idx, std::mt19937_64& rng) {
  const std::size_t n = idx.size();
  for (auto& i : idx) i = static_cast<std::size_t>(rng() % n);
}

// Linear interpolation between the order statistics of `sorted` (NumPy's default percentile).
double percentile(const std::vector<double>& sorted, double p) {
  const double h = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

BootstrapResult paired_bootstrap(const std::vector<BleuStats>& base, const std::vector<BleuStats>& system,
                                 const BleuConfig& config, int samples, std::uint64_t seed) {
  ATTNLAB_CHECK(base.size() == system.size(), "paired bootstrap: the base has {} sentences, the system {}",
                base.size(), system.size());
  ATTNLAB_CHECK(!base.empty(), "paired bootstrap: no sentences");
  ATTNLAB_CHECK(samples > 0, "paired bootstrap: samples must be positive");
  BootstrapResult r;
  r.samples = samples;
  r.base_bleu = compute_bleu(sum_all(base), config).score;
  r.system_bleu = compute_bleu(sum_all(system), config).score;
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> idx(base.size());
  int not_better = 0, not_worse = 0;
  for (int s = 0; s < samples; ++s) {
    draw(idx, rng);
    const double b = compute_bleu(sum_at(base, idx), config).score;
    const double y = compute_bleu(sum_at(system, idx), config).score;
    if (!(y > b)) ++not_better;
    if (!(y < b)) ++not_worse;
  }
  r.p_value = static_cast<double>(not_better) / samples;
  r.p_worse = static_cast<double>(not_worse) / samples;
  return r;
}

BootstrapInterval bootstrap_interval(const std::vector<BleuStats>& stats, const BleuConfig& config, int samples,
                                     std::uint64_t seed) {
  ATTNLAB_CHECK(!stats.empty(), "bootstrap interval: no sentences");
  ATTNLAB_CHECK(samples > 0, "bootstrap interval: samples must be positive");
  BootstrapInterval r;
  r.samples = samples;
  r.bleu = compute_bleu(sum_all(stats), config).score;
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> idx(stats.size());
  std::vector<double> scores(static_cast<std::size_t>(samples));
  for (auto& score : scores) {
    draw(idx, rng);
    score = compute_bleu(sum_at(stats, idx), config).score;
  }
  double sum = 0.0;
  for (const double x : scores) sum += x;
  r.mean = sum / samples;
  double squares = 0.0;
  for (const double x : scores) squares += (x - r.mean) * (x - r.mean);
  r.stddev = samples > 1 ? std::sqrt(squares / (samples - 1)) : 0.0;
  std::sort(scores.begin(), scores.end());
  r.lower = percentile(scores, 0.025);
  r.upper = percentile(scores, 0.975);
  return r;
}

}  // namespace attnlab::nmt
