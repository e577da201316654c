#pragma once
// A search over a suite's rows: asynchronous successive halving (ASHA; Li et al. 2020). Every row
// trains to the first rung; a row continues to the next rung only if it ranks in the best 1/eta
// of the rows that have reached its rung so far, and the others wait there. A waiting row is
// promoted later if enough rows arrive behind it, and is stopped for good once no further row can
// reach its rung (then the best of it goes on even when fewer than eta rows stand there). Rungs
// are first_rung * eta^k steps, and the last is max_steps.
//
//   [search]
//   method = "halving"
//   metric = "dev_ppl"     # or "dev_bleu"; ppl is minimised, BLEU maximised
//   eta = 3                # integer >= 2
//   first_rung = 200       # steps; a multiple of training.eval_every
//   max_steps = 5400       # optional: every row's training.max_steps (default: the rows' own)
//
// The decisions live in <run_dir>/search.json (search_state.h); the rule itself is a pure function
// of the rows' metrics at a rung (promotions_at_rung below).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/name_table.h"

namespace attnlab::nmt {

enum class SearchMethod : std::uint8_t { halving };
inline constexpr auto kSearchMethods = name_table<SearchMethod>("search method", {{SearchMethod::halving, "halving"}});

enum class SearchMetric : std::uint8_t { dev_ppl, dev_bleu };
inline constexpr auto kSearchMetrics = name_table<SearchMetric>(
    "search metric", {{SearchMetric::dev_ppl, "dev_ppl"}, {SearchMetric::dev_bleu, "dev_bleu"}});
std::string_view search_metric_name(SearchMetric metric);
// Whether a larger value of the metric is the better one (BLEU) or a smaller one (perplexity).
bool higher_is_better(SearchMetric metric);

struct SearchSpec {
  SearchMethod method = SearchMethod::halving;
  SearchMetric metric = SearchMetric::dev_ppl;
  std::int64_t eta = 3;
  std::int64_t first_rung = 0;  // steps
  std::int64_t max_steps = 0;   // steps of the last rung: a row that reaches it has finished
  std::string position;         // file:line:column of the [search] table, for messages
};

// The rungs' step counts: first_rung, first_rung * eta, ... below max_steps, then max_steps.
std::vector<std::int64_t> search_rungs(const SearchSpec& spec);

// One row's standing at a rung, for the rule: its place in the suite (ties go to the earlier row),
// its metric there (none: the row failed before it could be measured there) and whether it has
// already been promoted past the rung.
struct RungEntry {
  std::size_t row = 0;
  std::optional<double> metric;
  bool promoted = false;
};

// The rows to promote now from one rung: of the entries with a metric, the best floor(n / eta)
// (n: how many have one; ties broken by suite order) that are not promoted yet. A promotion is
// never taken back, so a row promoted while few rows had arrived stays promoted. Once the rung is
// `closed` (no further row can reach it) the best row goes on even when n < eta, so that a grid
// always ends with a row trained to the end.
std::vector<std::size_t> promotions_at_rung(const std::vector<RungEntry>& entries, std::int64_t eta,
                                            bool higher_better, bool closed);

}  // namespace attnlab::nmt
