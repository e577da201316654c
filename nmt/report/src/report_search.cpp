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
      run.search = run_standing(s, fs::path(run.dir).filename().string(), run.status == RowStatus::kDone);
      // A failure the search recorded (a Slurm task's, which suite.json does not learn of).
      if (run.search->standing == SearchStanding::failed && run.status == RowStatus::kPending)
        run.status = RowStatus::kFailed, run.error = run.search->error;
    }
}

}  // namespace attnlab::nmt
