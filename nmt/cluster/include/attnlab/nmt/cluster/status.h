#pragma once
// `attnlab status`: where every row of a suite (or one run folder) stands, read from the run
// folders (result.json, the folder lock, metrics.jsonl, run.log) and, where Slurm is there, from
// its queue. Reading never needs a lock and never changes a file.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnlab::nmt {

enum class RowPhase { kDone, kRunning, kQueued, kFailed, kStopped, kNotStarted, kSkipped };
// "done", "running", "queued", "failed", "stopped", "not started", "skipped"
std::string_view row_phase_name(RowPhase phase);

struct RowProgress {
  std::string name;
  std::uint64_t seed = 1;
  std::string dir;
  RowPhase phase = RowPhase::kNotStarted;
  std::int64_t step = 0, max_steps = 0;
  std::optional<double> eta_seconds;    // running rows, from the latest steps' pace
  std::optional<double> dev_ppl;        // the result's, or the last dev evaluation's
  std::optional<double> bleu;           // finished rows
  std::string where;                    // "pid 4711 on node3", "Slurm task 41_2 (Resources)"
  std::string error;                    // failed rows: why; skipped rows: why (unsupported = "skip")
  std::string same_as;                  // the row whose run (folder) this row is, or empty
  std::vector<std::string> log_tail;    // failed and stopped rows: the last lines of run.log
};

struct StatusReport {
  std::string name;     // the suite's (or the run folder's) name
  std::string run_dir;
  bool slurm = false;   // Slurm's queue was read
  std::vector<RowProgress> rows;
};

// `target`: a suite file, a suite's run folder (with suite.json) or one training run folder.
StatusReport read_status(const std::string& target);

// The report as a table with a summary line and, under failed and stopped rows, their log tails.
std::string format_status(const StatusReport& report);

}  // namespace attnlab::nmt
