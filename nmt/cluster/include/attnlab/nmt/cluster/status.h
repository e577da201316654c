#pragma once
// `attnlab status`: where every row of a suite (or one run folder) stands, read from the run
// folders (result.json, the folder lock, metrics.jsonl, run.log), the suite's search.json under a
// search and, where Slurm is there, its queue. Reading never needs a lock and never changes a file.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnlab::nmt {

// kHeld: a row of a search that its rule holds at a rung (waiting there or stopped for good).
enum class RowPhase { kDone, kRunning, kQueued, kFailed, kStopped, kNotStarted, kSkipped, kHeld };
// "done", "running", "queued", "failed", "stopped", "not started", "skipped", "held"
std::string_view row_phase_name(RowPhase phase);

struct RowProgress {
  std::string name;
  std::uint64_t seed = 1;
  std::string dir;
  RowPhase phase = RowPhase::kNotStarted;
  std::int64_t step = 0, max_steps = 0;
  std::optional<double> eta_seconds;    // running rows, from the latest steps' pace
  double seconds_per_step = 0.0;        // that pace (0: unknown)
  std::optional<double> dev_ppl;        // the result's, or the last dev evaluation's
  std::optional<double> bleu;           // finished rows
  std::string where;                    // "pid 4711 on node3", "Slurm task 41_2 (Resources)"
  std::string error;                    // failed rows: why; skipped rows: why (unsupported = "skip")
  std::string same_as;                  // the row whose run (folder) this row is, or empty
  std::vector<std::string> log_tail;    // failed and stopped rows: the last lines of run.log
  std::string search;                   // under a search: its standing ("stopped at rung 0: dev_ppl 7.12")
};

struct StatusReport {
  std::string name;     // the suite's (or the run folder's) name
  std::string run_dir;
  bool slurm = false;   // Slurm's queue was read
  std::string search;   // under a search: search_summary of its search.json ("" without one)
  std::vector<RowProgress> rows;
};

// `target`: a suite file, a suite's run folder (with suite.json) or one training run folder.
StatusReport read_status(const std::string& target);

// The report as a table with a summary line (and the search's, with a column of the rows' search
// standings) and, under failed and stopped rows, their log tails.
std::string format_status(const StatusReport& report);

}  // namespace attnlab::nmt
