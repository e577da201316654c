#pragma once
// What every way of training a suite's rows shares: the run's options, its log, suite.json (each
// row's status as it changes) and the summary, which the one scheduling loop (row_scheduler.h)
// records every row's turn into, whether the rows train in this process (suite_runner.cpp), in
// --jobs children (row_pool.cpp) or in a Slurm task (run_task).
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "attnlab/nmt/suite/suite.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "attnlab/nmt/eval/evaluation.h"
#include "attnlab/nmt/suite/suite_runner.h"
#include "attnlab/nmt/train/trainer.h"

namespace attnlab::nmt {

struct SuiteRun {
  const Suite& suite;
  const SuiteRunOptions& options;
  std::function<void(const std::string&)> log;  // options.log, or stderr when it has none
  SuiteState state;
  SuiteRunSummary summary;
  bool keeps_state = true;  // false in a scheduler's task: suite.json is the suite runner's

  // suite.json is written at every change, so that a run stopped at any point leaves it current.
  void save_state() const;
  void set_status(const SuiteRow& row, RowStatus status, const std::string& error);
  // A row's turn began / ended: its status, the log line, the summary's count.
  void record_start(const SuiteRow& row);
  void record(const SuiteRow& row, const RowTurn& turn);
  // Whether the rows train under the suite's search: it has one, and the run is not --no-prune.
  bool searching() const { return suite.search && !options.no_prune; }
};

// The dev set's evaluation of a row's model from `checkpoint` (a run folder or checkpoint file).
Evaluation evaluate_row_on_dev(const SuiteRow& row, const std::string& checkpoint, const Registry& registry);

// Trains a row in its folder, to its end or (pause_at_step > 0) to that step with its checkpoint;
// throws RowInterrupted when a signal stopped it. The caller holds the row's folder lock.
TrainResult train_row(const SuiteRow& row, const Registry& registry, const RowRunOptions& options,
                      std::int64_t pause_at_step);

// Trains a row to its end (unless `trained_already` says how its training ended), evaluates it on
// the dev set and writes result.json. The caller holds the row's folder lock.
RowResult finish_row(const SuiteRow& row, const Registry& registry, const RowRunOptions& options,
                     const TrainResult* trained_already);

// run_row under the suite's search (search_row.cpp); the caller holds the row's folder lock.
RowOutcome run_search_row(const Suite& suite, const SuiteRow& row, const Registry& registry,
                          const RowRunOptions& options);


}  // namespace attnlab::nmt
