// The report under a suite's search: each run's standing from RUN_DIR/search.json (report_sources.h).
#include <filesystem>

#include "attnlab/nmt/suite/search_state.h"
#include "report_sources.h"

namespace attnlab::nmt {

void read_search(Report& report) {
  namespace fs = std::filesystem;
  const fs::path path = fs::path(report.run_dir) / "search.json";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;
  try {
    report.search = read_search_state(path.string());
  } catch (const std::exception& e) {
    report.warnings.push_back(e.what());
    return;
  }
  const SearchState& s = *report.search;
  if (s.rungs.empty()) return;
  for (ReportRow& row : report.rows)
    for (ReportRun& run : row.runs) {
      if (run.status == RowStatus::kSkipped) continue;
      // A run whose folder search.json does not name (new, or changed since) starts at rung 0.
      const std::string folder = fs::path(run.dir).filename().string();
      const SearchRowState* entry = s.find_dir(folder);
      const std::string key = entry ? entry->key : std::string();
      const bool finished = run.status == RowStatus::kDone;
      RunSearch rs;
      rs.standing = s.standing(key, finished);
      rs.rung = s.standing_rung(key, finished);
      rs.rung_steps = s.rungs[static_cast<std::size_t>(rs.rung)];
      if (entry) {
        if (entry->reached() > rs.rung) rs.metric = entry->metrics[static_cast<std::size_t>(rs.rung)];
        rs.no_prune = entry->no_prune;
      }
      rs.text = search_standing_text(s, key, finished);
      // A failure the search recorded (a Slurm task's, which suite.json does not learn of).
      if (rs.standing == SearchStanding::failed && run.status == RowStatus::kPending)
        run.status = RowStatus::kFailed, run.error = entry->error;
      run.search = rs;
    }
}

}  // namespace attnlab::nmt
