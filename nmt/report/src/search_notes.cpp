// The report's notes under a search (table.h): its course, what it cost beside the full grid, and
// what a standing means; with several sources, one set per source that has a search.
#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "table.h"

namespace attnlab::nmt::detail {
namespace {

// The report's runs in search `s`, by folder (a row the search does not name, e.g. one changed
// since, is no run of it). `label` selects the rows of one source ("" : every row).
std::vector<const ReportRun*> search_runs(const Report& report, const SearchState& s, std::string_view label) {
  std::vector<const ReportRun*> out;
  for (const ReportRow& row : report.rows) {
    if (!label.empty() && !row.name.starts_with(fmt::format("{}/", label))) continue;
    for (const ReportRun& run : row.runs) {
      const std::string folder = std::filesystem::path(run.dir).filename().string();
      const bool seen = std::any_of(out.begin(), out.end(), [&](const ReportRun* r) { return r->dir == run.dir; });
      if (!seen && s.find_dir(folder)) out.push_back(&run);
    }
  }
  return out;
}

// What the search has spent (its runs' training time, by metrics.jsonl and the manifests' thread
// counts) beside the full grid's cost at the same pace.
std::string search_cost_text(const SearchState& s, const std::vector<const ReportRun*>& runs) {
  const std::int64_t max_steps = s.rungs.empty() ? 0 : s.rungs.back();
  std::int64_t steps = 0, unknown_threads = 0;
  double seconds = 0.0, thread_seconds = 0.0, paced_seconds = 0.0, paced_thread_seconds = 0.0;
  int paced = 0, trained = 0;
  for (const ReportRun* run : runs) {
    trained += run->trained_steps > 0;
    const double threads = static_cast<double>(run->threads > 0 ? run->threads : 1);
    unknown_threads += run->threads <= 0 && run->trained_steps > 0;
    steps += run->trained_steps;
    seconds += run->trained_seconds;
    thread_seconds += run->trained_seconds * threads;
    if (run->trained_steps > 0 && run->trained_seconds > 0.0) {
      const double pace = run->trained_seconds / static_cast<double>(run->trained_steps);
      paced_seconds += pace, paced_thread_seconds += pace * threads, ++paced;
    }
  }
  if (paced == 0) return "search cost: no run has trained yet";
  // The full grid: every row of the search to the last rung at its own run's pace (seconds per
  // step); a row without a timed run at the mean pace of the others.
  const auto rows = static_cast<double>(s.rows.size());
  const double full = paced_seconds / paced * rows * static_cast<double>(max_steps);
  const double full_threads = paced_thread_seconds / paced * rows * static_cast<double>(max_steps);
  std::string out = fmt::format(
      "search cost: {} of training in {} runs ({} of threads: each run's training time times its threads{}), {} "
      "steps; the full grid ({} rows x {} steps), each row at its run's pace, would take {} ({} of threads{}): {:.0f} % "
      "of it spent",
      duration(seconds), trained, duration(thread_seconds),
      unknown_threads ? fmt::format("; {} run(s) without a recorded thread count counted as one thread", unknown_threads) : "",
      steps, s.rows.size(), max_steps, duration(full), duration(full_threads),
      static_cast<double>(paced) < rows ? fmt::format("; {} row(s) not timed yet at the others' mean pace", s.rows.size() - paced)
                                         : "",
      full_threads > 0.0 ? 100.0 * thread_seconds / full_threads : 0.0);
  if (s.metric == SearchMetric::dev_bleu) {
    // A row measured at a rung before the last decoded the dev set there (the last rung's BLEU is the
    // finished run's own evaluation, which the full grid has too).
    std::int64_t decodings = 0;
    const auto last = static_cast<std::int64_t>(s.rungs.size()) - 1;
    for (const SearchRowState& r : s.rows) decodings += std::min(r.reached(), last);
    out += fmt::format("; besides, {} decoding(s) of the dev set at the rungs before the last (not timed)", decodings);
  }
  return out;
}

}  // namespace

std::vector<std::string> search_notes(const Report& report) {
  // The searches: the report's own, or each source's (label "SOURCE: ").
  std::vector<std::pair<std::string, const SearchState*>> searches;
  if (report.search) searches.emplace_back("", &*report.search);
  for (const Report::Source& source : report.sources)
    if (source.search) searches.emplace_back(source.label, &*source.search);
  if (searches.empty()) return {};
  std::vector<std::string> out;
  for (const auto& [label, s] : searches) {
    const std::string prefix = label.empty() ? "" : label + ": ";
    out.push_back(fmt::format("{}search: {}", prefix, search_summary(*s)));
    out.push_back(prefix + search_cost_text(*s, search_runs(report, *s, label)));
  }
  // The metrics a standing quotes: one search's, or each different one of several searches'.
  const auto measured = [](SearchMetric m) {
    return m == SearchMetric::dev_bleu ? std::string("BLEU of the dev set decoded with the rung's checkpoint")
                                       : std::string("the trainer's dev evaluation there, not a final evaluation");
  };
  std::vector<SearchMetric> metrics;
  for (const auto& entry : searches)
    if (std::find(metrics.begin(), metrics.end(), entry.second->metric) == metrics.end())
      metrics.push_back(entry.second->metric);
  std::string quoted;
  if (metrics.size() == 1) {
    quoted = fmt::format("its {} at that rung ({})", search_metric_name(metrics.front()), measured(metrics.front()));
  } else {
    std::vector<std::string> each;
    for (const SearchMetric m : metrics) each.push_back(fmt::format("{}: {}", search_metric_name(m), measured(m)));
    quoted = fmt::format("its search's metric at that rung ({})", fmt::join(each, "; "));
  }
  out.push_back(fmt::format(
      "search: a run not done shows its standing: promoted to rung k (it trains to rung k next), waiting at rung k "
      "(it may yet be promoted), stopped at rung k (ranked out for good), with {}; its result columns stay empty",
      quoted));
  for (const ReportRow& row : report.rows)
    for (const ReportRun& run : row.runs)
      if (run.search && run.search->no_prune)
        out.push_back(fmt::format("{} (seed {}): trained with --no-prune, past the search's rule", row.name, run.seed));
  return out;
}

}  // namespace attnlab::nmt::detail
