// `attnlab status` under a search (status_search.h).
#include "status_search.h"

#include <filesystem>

#include <fmt/core.h>

#include "attnlab/nmt/suite/search_state.h"

namespace attnlab::nmt {

void add_search_standings(StatusReport& report) {
  namespace fs = std::filesystem;
  const fs::path path = fs::path(report.run_dir) / "search.json";
  std::error_code ec;
  if (report.run_dir.empty() || !fs::is_regular_file(path, ec)) return;
  std::optional<SearchState> state;
  try {
    state = read_search_state(path.string());
  } catch (const std::exception& e) {
    report.search = fmt::format("unreadable: {}", e.what());
    return;
  }
  if (!state || state->rungs.empty()) return;
  report.search = search_summary(*state);
  for (RowProgress& r : report.rows) {
    if (r.phase == RowPhase::kSkipped) continue;
    // A row whose folder search.json does not name (new, or changed since) starts at rung 0.
    const std::string folder = fs::path(r.dir).filename().string();
    const SearchRowState* row = state->find_dir(folder);
    const std::string key = row ? row->key : std::string();
    const bool finished = r.phase == RowPhase::kDone;
    const SearchStanding standing = state->standing(key, finished);
    r.search = search_standing_text(*state, key, finished);
    if (r.phase == RowPhase::kRunning && !finished) {
      const std::int64_t rung = state->standing_rung(key, false);
      const std::int64_t target = state->rungs[static_cast<std::size_t>(rung)];
      r.search = row && row->no_prune ? fmt::format("running to the end with --no-prune ({} steps)", target)
                                      : fmt::format("running to rung {} ({} steps)", rung, target);
      if (r.seconds_per_step > 0 && target > r.step)
        r.eta_seconds = r.seconds_per_step * static_cast<double>(target - r.step);
    } else if (held_at_rung(standing) && r.phase == RowPhase::kStopped) {
      r.phase = RowPhase::kHeld;
      r.log_tail.clear();
    } else if (standing == SearchStanding::failed && r.phase != RowPhase::kQueued) {
      r.phase = RowPhase::kFailed;
      if (r.error.empty()) r.error = row->error.substr(0, row->error.find('\n'));
    }
  }
}

}  // namespace attnlab::nmt
