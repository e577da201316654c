// The search in words (search_state.h): a metric, a row's standing, the search's course, and a
// run's standing as `attnlab status` and the report show it.
#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/nmt/suite/search_state.h"

namespace attnlab::nmt {

std::string search_metric_text(SearchMetric metric, std::optional<double> value) {
  return value ? fmt::format("{} {:.4g}", search_metric_name(metric), *value)
               : fmt::format("no {}", search_metric_name(metric));
}

std::string search_standing_text(const SearchState& state, std::string_view key, bool finished) {
  const SearchRowState* r = state.find(key);
  const std::int64_t k = state.standing_rung(key, finished);
  const auto steps = [&] { return state.rungs.empty() ? std::int64_t{0} : state.rungs[static_cast<std::size_t>(k)]; };
  const bool no_prune = r && r->no_prune;
  const SearchStanding standing = state.standing(key, finished);
  switch (standing) {
    case SearchStanding::pending: return fmt::format("pending, to rung {} ({} steps)", k, steps());
    case SearchStanding::promoted:
      if (no_prune) return fmt::format("to the end with --no-prune ({} steps)", steps());
      return fmt::format("promoted to rung {} ({} steps)", k, steps());
    case SearchStanding::waiting:
    case SearchStanding::stopped:
      return fmt::format("{} at rung {}: {}", search_standing_name(standing), k,
                         search_metric_text(state.metric, r->metrics[static_cast<std::size_t>(k)]));
    case SearchStanding::finished: return no_prune ? "finished with --no-prune" : "finished";
    case SearchStanding::failed: return fmt::format("failed before rung {} ({} steps)", k, steps());
  }
  return "";
}

RunStanding run_standing(const SearchState& state, std::string_view folder, bool finished) {
  RunStanding r;
  const SearchRowState* entry = state.find_dir(folder);
  const std::string key = entry ? entry->key : std::string();
  r.standing = state.standing(key, finished);
  r.rung = state.standing_rung(key, finished);
  r.rung_steps = state.rungs.empty() ? 0 : state.rungs[static_cast<std::size_t>(r.rung)];
  if (entry) {
    if (entry->reached() > r.rung) r.metric = entry->metrics[static_cast<std::size_t>(r.rung)];
    r.no_prune = entry->no_prune;
    if (r.standing == SearchStanding::failed) r.error = entry->error;
  }
  r.text = search_standing_text(state, key, finished);
  return r;
}

std::string search_summary(const SearchState& state) {
  const std::int64_t max_steps = state.rungs.empty() ? 0 : state.rungs.back();
  const std::int64_t grid = max_steps * static_cast<std::int64_t>(state.rows.size());
  const std::int64_t trained = state.steps_trained();
  const double share = grid > 0 ? 100.0 * static_cast<double>(trained) / static_cast<double>(grid) : 0.0;
  std::string out = fmt::format(
      "{} by {} ({} is better), eta {}, rungs {} steps; {} of the full grid's {} steps trained ({:.0f} %; {} rows x {})",
      kSearchMethods.name(state.method), search_metric_name(state.metric), higher_is_better(state.metric) ? "higher" : "lower", state.eta,
      fmt::join(state.rungs, ", "), trained, grid, share, state.rows.size(), max_steps);
  std::int64_t rung = 0;
  if (const SearchRowState* best = state.best_so_far(rung))
    out += fmt::format("; best so far: {}, {} at rung {} ({} steps)", best->key,
                       search_metric_text(state.metric, best->metrics[static_cast<std::size_t>(rung)]), rung,
                       state.rungs[static_cast<std::size_t>(rung)]);
  else
    out += "; no row measured yet";
  return out;
}

}  // namespace attnlab::nmt
