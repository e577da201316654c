#pragma once
// The one loop that schedules a suite's rows, whatever trains them: it asks for the next row while
// a slot is free, starts it, waits for a row's turn to end and records it (SuiteRun::record). The
// executors say where rows run: here, one at a time (InProcessRows), or in child processes, `jobs`
// at once (row_pool.cpp). The pickers say which row is next: the suite's rows in order or under a
// search (run_suite), or a Slurm task's own row and then the promoted ones (run_task).
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "suite_run.h"

namespace attnlab::nmt {

class RowExecutor {
 public:
  virtual ~RowExecutor() = default;
  // How many rows may train at once.
  virtual std::size_t slots() const = 0;
  // Starts the row's turn (an executor that trains in this process runs it to its end here).
  // Throws when the row cannot start at all, which the loop records as the row's failure.
  virtual void start(const SuiteRow& row) = 0;
  struct Ended {
    const SuiteRow* row = nullptr;
    RowTurn turn;
  };
  // The end of one started row's turn; called only while one is started and not yet waited for.
  virtual Ended wait() = 0;
};

// The next row to train, none of `passed_over` (keys NAME@SEED: rows running now, rows that failed
// or were lost in this run); nullptr when none is left.
using RowPicker = std::function<const SuiteRow*(const std::set<std::string>& passed_over)>;

// Trains rows until the picker has none left or an interruption (Ctrl-C, a stop signal, a row
// interrupted) lets no further row start; the running ones end their turns first.
void schedule_rows(SuiteRun& run, const RowPicker& pick, RowExecutor& executor);

// Rows trained in this process, one at a time; `options_for` gives each its options (its log).
class InProcessRows : public RowExecutor {
 public:
  InProcessRows(const Suite& suite, const Registry& registry,
                std::function<RowRunOptions(const SuiteRow&)> options_for)
      : suite_(suite), registry_(registry), options_for_(std::move(options_for)) {}
  std::size_t slots() const override { return 1; }
  void start(const SuiteRow& row) override;
  Ended wait() override { return ended_; }

 private:
  const Suite& suite_;
  const Registry& registry_;
  std::function<RowRunOptions(const SuiteRow&)> options_for_;
  Ended ended_;
};

// Rows trained in child processes (`attnlab run SUITE --row NAME@SEED`), options.jobs at once, each
// with its job slot's share of the machine (row_pool.cpp).
std::unique_ptr<RowExecutor> child_process_rows(SuiteRun& run);

}  // namespace attnlab::nmt
