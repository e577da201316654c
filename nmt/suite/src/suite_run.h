#pragma once
// What the two ways run_suite trains its rows share: one after another in this process
// (suite_runner.cpp) or several at once in child processes (row_pool.cpp). Both record every
// row's status in suite.json as it changes and count the rows into the summary run_suite returns.
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

  // suite.json is written at every change, so that a run stopped at any point leaves it current.
  void save_state() const;
  void set_status(const SuiteRow& row, RowStatus status, const std::string& error);
  // Whether the rows train under the suite's search: it has one, and the run is not --no-prune.
  bool searching() const { return suite.search && !options.no_prune; }
  // The next row of `todo` to train: the one at `next` (which advances), or under a search the one
  // next_search_row picks (promotions first), none of `passed_over`. nullptr when none is left.
  const SuiteRow* next_row(const std::vector<const SuiteRow*>& todo, std::size_t& next,
                           const std::set<std::string>& passed_over) const;
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

// Trains the rows of `todo` in child processes, options.jobs at once, until all have ended or an
// interruption (Ctrl-C, a child that exits 130) lets no further row start.
void run_rows_in_parallel(SuiteRun& run, const std::vector<const SuiteRow*>& todo);

}  // namespace attnlab::nmt
