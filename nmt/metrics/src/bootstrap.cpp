#include "attnlab/nmt/metrics/bootstrap.h"

#include <random>

#include "attnlab/error.h"

namespace attnlab::nmt {

BootstrapResult paired_bootstrap(const std::vector<BleuStats>& base, const std::vector<BleuStats>& system,
                                 const BleuConfig& config, int samples, std::uint64_t seed) {
  ATTNLAB_CHECK(base.size() == system.size(), "paired bootstrap: the base has {} sentences, the system {}",
                base.size(), system.size());
  ATTNLAB_CHECK(!base.empty(), "paired bootstrap: no sentences");
  ATTNLAB_CHECK(samples > 0, "paired bootstrap: samples must be positive");
  const auto sum = [](const std::vector<BleuStats>& v, const std::vector<std::size_t>* idx) {
    BleuStats total;
    if (idx)
      for (const std::size_t i : *idx) total += v[i];
    else
      for (const auto& s : v) total += s;
    return total;
  };
  BootstrapResult r;
  r.samples = samples;
  r.base_bleu = compute_bleu(sum(base, nullptr), config).score;
  r.system_bleu = compute_bleu(sum(system, nullptr), config).score;
  std::mt19937_64 rng(seed);
  const std::size_t n = base.size();
  std::vector<std::size_t> idx(n);
  int not_better = 0, not_worse = 0;
  for (int s = 0; s < samples; ++s) {
    for (auto& i : idx) i = static_cast<std::size_t>(rng() % n);
    const double b = compute_bleu(sum(base, &idx), config).score;
    const double y = compute_bleu(sum(system, &idx), config).score;
    if (!(y > b)) ++not_better;
    if (!(y < b)) ++not_worse;
  }
  r.p_value = static_cast<double>(not_better) / samples;
  r.p_worse = static_cast<double>(not_worse) / samples;
  return r;
}

}  // namespace attnlab::nmt
