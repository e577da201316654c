// The report's notes under a search (table.h).
#include <fmt/core.h>

#include "table.h"

namespace attnlab::nmt::detail {

std::vector<std::string> search_notes(const Report& report) {
  if (!report.search) return {};
  const SearchState& s = *report.search;
  std::vector<std::string> out{fmt::format("search: {}", search_summary(s))};
  out.push_back(fmt::format(
      "search: a run not done shows its standing: promoted to rung k (it trains to rung k next), waiting at rung k "
      "(it may yet be promoted), stopped at rung k (ranked out for good), with its {} at that rung ({}); its result "
      "columns stay empty",
      search_metric_name(s.metric),
      s.metric == SearchMetric::dev_bleu ? "BLEU of the dev set decoded with the rung's checkpoint"
                                         : "the trainer's dev evaluation there, not a final evaluation"));
  for (const ReportRow& row : report.rows)
    for (const ReportRun& run : row.runs)
      if (run.search && run.search->no_prune)
        out.push_back(fmt::format("{} (seed {}): trained with --no-prune, past the search's rule", row.name, run.seed));
  return out;
}

}  // namespace attnlab::nmt::detail
