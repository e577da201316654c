#pragma once
// Runs a suite: every row trained (resuming an interrupted one) and evaluated, each in its own
// folder named by row, seed and configuration hash. A finished row (its result.json exists) is
// skipped, a changed row gets a new hash and is trained afresh, a failing row is recorded and the
// suite goes on.
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "attnlab/error.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::nmt {

struct SuiteRunOptions {
  std::vector<std::string> rows;     // names to run (empty: all)
  std::int64_t jobs = 1;             // rows at once (child processes)
  std::vector<std::string> devices;  // one per job slot, e.g. cuda:0,cuda:1 (empty: each row's own)
  // How the machine is divided among the jobs (machine_share.h): rows that leave threads at 0
  // get cores / jobs threads (threads_per_row > 0: that many), cuda rows gpus_per_row GPUs of
  // their own. cores 0: allotted_cpus(); gpu_count -1: the GPUs CUDA sees.
  std::int64_t gpus_per_row = 1;
  std::int64_t threads_per_row = 0;
  std::int64_t cores = 0;
  std::int64_t gpu_count = -1;
  std::string program;               // the attnlab executable, for child processes (jobs > 1)
  std::function<void(const std::string&)> log;
  bool progress = true;
  bool no_prune = false;             // a search's rows trained to the end whatever the rule says
};

struct SuiteRunSummary {
  std::int64_t done = 0, skipped = 0, failed = 0;
  std::int64_t unsupported = 0;  // rows skipped because their plugin cannot serve them
  std::int64_t same = 0;         // rows that are the same run as an earlier row
  bool interrupted = false;
};

// Thrown by run_row when training was interrupted (Ctrl-C); the row resumes on the next run.
class RowInterrupted : public Error {
 public:
  using Error::Error;
};

struct RowRunOptions {
  bool progress = true;
  std::function<void(const std::string&)> log;
  bool no_prune = false;  // under a search: train to the end from where the row stands (--no-prune)
};

// What became of a row: its result when it finished, else the rung where the search holds it.
struct RowOutcome {
  std::optional<RowResult> result;
  std::int64_t held_at_rung = -1;
};

// Trains and evaluates one row in its folder (result.json written last). Under a search (without
// no_prune) it trains to the rung it may reach, is ranked there (search_state.h), and goes on
// while the rule promotes it; a row held at a rung returns without a result. Throws on failure.
RowOutcome run_row(const Suite& suite, const SuiteRow& row, const Registry& registry, const RowRunOptions& options);

// How a row's turn ended, the same on every path that trains rows (one after another in this
// process, a --jobs child process, a Slurm array task).
enum class RowEnd {
  finished,     // result.json written
  held,         // stopped at a rung by the search, to go on if promoted
  lost,         // another process had the row's folder: it trains the row, nothing failed
  failed,       // an error (RowTurn::error); the row's folder has row-error.txt
  interrupted,  // Ctrl-C or a stop signal: the row resumes from its checkpoint next time
};

struct RowTurn {
  RowEnd end = RowEnd::failed;
  std::int64_t held_at_rung = -1;  // held: the rung, when known
  std::string error;               // failed: why
};

// run_row with its end typed instead of thrown. A failure is also written to the row's
// row-error.txt (for `attnlab status`), which the row's next turn that does not fail removes.
RowTurn run_row_turn(const Suite& suite, const SuiteRow& row, const Registry& registry, const RowRunOptions& options);

// The exit status of a child that ran one row's turn for a --jobs parent, and back: finished 0,
// held 75, lost 74, interrupted 130, failed 1 (and every other status: a crash is a failure).
int row_end_exit_code(RowEnd end);
RowEnd row_end_of_exit_code(int code);

// Under a search: the row a worker trains next among `rows` (ASHA's order): a promoted row, the
// highest rung first, then in suite order; else, unless `promoted_only`, a row that has not
// started. Never a finished row, one held at its rung, one in `passed_over` (keys NAME@SEED) or
// one whose folder another process holds. nullptr when there is none.
const SuiteRow* next_search_row(const Suite& suite, const std::vector<const SuiteRow*>& rows,
                                const std::set<std::string>& passed_over, bool promoted_only);

SuiteRunSummary run_suite(const Suite& suite, const Registry& registry, const SuiteRunOptions& options);

// A scheduler's task (a Slurm array task): `row` in this process, then, with take_promoted under a
// search, every row the search has promoted that no process trains, one after another (the task
// that records a result may promote rows whose own tasks have ended). The first row's lines go to
// options.log, a promoted row's to its own run.log. suite.json is left to the suite's runner.
SuiteRunSummary run_task(const Suite& suite, const SuiteRow& row, const Registry& registry,
                         const RowRunOptions& options, bool take_promoted);

}  // namespace attnlab::nmt
