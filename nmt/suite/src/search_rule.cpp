// The halving rule (search.h): rungs and promotions, pure functions of their inputs.
#include <algorithm>

#include "attnlab/error.h"
#include "attnlab/nmt/suite/search.h"

namespace attnlab::nmt {

std::string_view search_metric_name(SearchMetric metric) { return kSearchMetrics.name(metric); }

bool higher_is_better(SearchMetric metric) { return metric == SearchMetric::dev_bleu; }

std::vector<std::int64_t> search_rungs(const SearchSpec& spec) {
  ATTNLAB_CHECK(spec.eta >= 2 && spec.first_rung > 0 && spec.first_rung <= spec.max_steps,
                "search: eta {} (>= 2), first rung {} and max_steps {} do not make rungs", spec.eta, spec.first_rung,
                spec.max_steps);
  std::vector<std::int64_t> rungs;
  for (std::int64_t r = spec.first_rung; r < spec.max_steps; r *= spec.eta) rungs.push_back(r);
  rungs.push_back(spec.max_steps);
  return rungs;
}

std::vector<std::size_t> promotions_at_rung(const std::vector<RungEntry>& entries, std::int64_t eta,
                                            bool higher_better, bool closed) {
  std::vector<const RungEntry*> ranked;
  for (const RungEntry& e : entries)
    if (e.metric) ranked.push_back(&e);
  std::sort(ranked.begin(), ranked.end(), [&](const RungEntry* a, const RungEntry* b) {
    if (*a->metric != *b->metric) return higher_better ? *a->metric > *b->metric : *a->metric < *b->metric;
    return a->row < b->row;
  });
  std::size_t best = ranked.size() / static_cast<std::size_t>(eta);
  if (closed && !ranked.empty()) best = std::max<std::size_t>(best, 1);
  std::vector<std::size_t> promote;
  for (std::size_t i = 0; i < best; ++i)
    if (!ranked[i]->promoted) promote.push_back(ranked[i]->row);
  std::sort(promote.begin(), promote.end());
  return promote;
}

}  // namespace attnlab::nmt
