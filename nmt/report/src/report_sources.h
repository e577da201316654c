#pragma once
// Internal to the report: reading what a run folder holds into the report's structures.
#include <string>

#include "attnlab/nmt/report/report.h"

namespace attnlab::nmt {

// A folder of `attnlab train` (config.toml and no suite.json).
bool is_train_run_folder(const std::string& dir);
// Learning curves from run.dir/metrics.jsonl and the evaluations recorded in run.dir/eval/ (an
// unreadable record becomes a warning of the report).
void read_run_files(ReportRun& run, Report& report);
// The one-row report of a train folder, before summaries (build_report adds them).
Report collect_train_run(const std::string& run_dir);
// Under a suite's search: report.search from RUN_DIR/search.json and each run's standing in it (an
// unreadable file becomes a warning). Runs are matched by folder; done runs are finished, and a
// pending run the search recorded as failed is failed, with the search's error.
void read_search(Report& report);

}  // namespace attnlab::nmt
