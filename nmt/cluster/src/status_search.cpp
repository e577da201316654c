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
    const bool finished = r.phase == RowPhase::kDone;
    const RunStanding s = run_standing(*state, fs::path(r.dir).filename().string(), finished);
    r.search = s.text;
    if (r.phase == RowPhase::kRunning && !finished) {
      r.search = s.no_prune ? fmt::format("running to the end with --no-prune ({} steps)", s.rung_steps)
                            : fmt::format("running to rung {} ({} steps)", s.rung, s.rung_steps);
      if (r.seconds_per_step > 0 && s.rung_steps > r.step)
        r.eta_seconds = r.seconds_per_step * static_cast<double>(s.rung_steps - r.step);
    } else if (held_at_rung(s.standing) && r.phase == RowPhase::kStopped) {
      r.phase = RowPhase::kHeld;
      r.log_tail.clear();
    } else if (s.standing == SearchStanding::failed && r.phase != RowPhase::kQueued) {
      r.phase = RowPhase::kFailed;
      if (r.error.empty()) r.error = s.error.substr(0, s.error.find('\n'));
    }
  }
}

}  // namespace attnlab::nmt
