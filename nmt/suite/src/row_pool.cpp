// The parallel path of run_suite: one child process per row (`attnlab run SUITE --row NAME@SEED`),
// at most `jobs` alive, job slot k with its share of the machine (or on devices[k % devices.size()]).
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "attnlab/device.h"
#include "attnlab/error.h"
#include "attnlab/threads.h"
#include "attnlab/nmt/suite/machine_share.h"
#include "attnlab/nmt/train/stop_signals.h"
#include "row_process.h"
#include "suite_run.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

// The machine the options describe; what this process is allotted where they leave it open.
MachinePlan plan_machine(const SuiteRunOptions& o) {
  return divide_machine(o.cores > 0 ? o.cores : allotted_cpus(),
                        o.gpu_count >= 0 ? o.gpu_count : cuda_device_count(), o.jobs, o.gpus_per_row,
                        o.threads_per_row);
}

// What a row started in `slot` runs with: the slot's share of the machine, or the device the
// options give the slot (which then decides the GPU alone).
RowResources slot_resources(const SuiteRow& row, const MachinePlan& plan, std::size_t slot,
                            const SuiteRunOptions& o) {
  RowResources share = row_resources(row.config, plan.slots[slot]);
  if (!o.devices.empty()) share.device = o.devices[slot % o.devices.size()], share.visible_gpus.clear();
  return share;
}

// The child's command: the same suite file, this row only, quiet (its log is run.log), with the
// threads of its share; --device only where the share moves the row off its own device.
RowCommand row_command(const SuiteRun& run, const SuiteRow& row, const RowResources& share) {
  RowCommand command;
  command.argv = {run.options.program, "run", run.suite.source_file, "--row", row_key(row), "--quiet",
                  "--threads", std::to_string(share.threads)};
  if (share.device != row.config.device) command.argv.insert(command.argv.end(), {"--device", share.device});
  if (run.options.no_prune) command.argv.push_back("--no-prune");
  command.log_path = (fs::path(row.config.run_dir) / "run.log").string();
  command.threads = share.threads;
  command.visible_gpus = share.visible_gpus;
  return command;
}

// The children alive and the job slots they hold. A slot freed by a child that ended goes to the
// next row, so that slot k keeps its share of the machine whichever row holds it.
class RowPool {
 public:
  RowPool(SuiteRun& run, MachinePlan plan)
      : run_(run), plan_(std::move(plan)), slot_busy_(static_cast<std::size_t>(run.options.jobs), false) {}

  bool full() const { return children_.size() >= slot_busy_.size(); }
  bool empty() const { return children_.empty(); }
  // The rows not to start now: those running here and those that failed in this run.
  std::set<std::string> passed_over() const {
    std::set<std::string> keys = failed_;
    for (const auto& [pid, child] : children_) keys.insert(row_key(*child.row));
    return keys;
  }

  // Starts the row's child in the first free slot; the pool must not be full.
  void start(const SuiteRow& row) {
    std::size_t slot = 0;
    while (slot_busy_[slot]) ++slot;
    const RowResources share = slot_resources(row, plan_, slot, run_.options);
    const RowCommand command = row_command(run_, row, share);
    fs::create_directories(row.config.run_dir);
    const pid_t pid = start_row_process(command);
    slot_busy_[slot] = true;
    children_[pid] = {&row, slot};
    run_.set_status(row, RowStatus::kPending, "");
    run_.log(fmt::format("== {} (seed {}) started on {}{}, {} thread(s) -> {} (log: {})", row.name, row.seed,
                         share.device,
                         share.visible_gpus.empty() ? std::string() : " (GPUs " + share.visible_gpus + ")",
                         share.threads, row.config.run_dir, command.log_path));
  }

  // Waits for a child to end and records its row. false: this process has no child left.
  bool wait() {
    const EndedProcess ended = wait_for_child();
    if (ended.pid < 0) return false;
    auto it = children_.find(ended.pid);
    if (it == children_.end()) return true;  // not one of the rows' children
    const auto [row, slot] = it->second;
    children_.erase(it);
    slot_busy_[slot] = false;
    record(*row, ended.code);
    return true;
  }

 private:
  // Done only with its result.json; 130 is the child's Ctrl-C (the row resumes next time).
  void record(const SuiteRow& row, int code) {
    if (code == 0 && fs::exists(fs::path(row.config.run_dir) / "result.json")) {
      run_.set_status(row, RowStatus::kDone, "");
      ++run_.summary.done;
      run_.log(fmt::format("{} (seed {}): done", row.name, row.seed));
    } else if (code == 0 && run_.suite.search) {  // held at a rung by the search (its run.log says which)
      run_.set_status(row, RowStatus::kPending, "");
      run_.log(fmt::format("{} (seed {}): held at a rung by the search", row.name, row.seed));
    } else if (code == 130) {
      run_.set_status(row, RowStatus::kPending, "");
      run_.summary.interrupted = true;
    } else {
      run_.set_status(row, RowStatus::kFailed,
                      fmt::format("exit status {} (see {}/run.log)", code, row.config.run_dir));
      ++run_.summary.failed;
      failed_.insert(row_key(row));
      run_.log(fmt::format("{} (seed {}) failed with exit status {}; see {}/run.log", row.name, row.seed, code,
                           row.config.run_dir));
    }
  }

  struct Child {
    const SuiteRow* row;
    std::size_t slot;
  };
  SuiteRun& run_;
  const MachinePlan plan_;
  std::map<pid_t, Child> children_;
  std::vector<bool> slot_busy_;
  std::set<std::string> failed_;
};

}  // namespace

void run_rows_in_parallel(SuiteRun& run, const std::vector<const SuiteRow*>& todo) {
  ATTNLAB_CHECK(!run.options.program.empty(), "run_suite: jobs > 1 needs the attnlab program path");
  const MachinePlan plan = plan_machine(run.options);
  run.log(plan.describe());
  RowPool pool(run, plan);
  // The next row is asked for each time a slot frees: under a search, a row promoted by a child's
  // result is started then.
  std::size_t next = 0;
  // After an interruption (Ctrl-C reaches the whole process group) no further row starts: the
  // running ones stop at their next step and the suite resumes from there.
  const auto may_start = [&] { return !run.summary.interrupted && !stop_requested(); };
  bool left = false;  // a row could not start because of an interruption
  for (;;) {
    while (!pool.full()) {
      if (!may_start()) {
        left = run.searching() || next < todo.size();
        break;
      }
      const SuiteRow* row = run.next_row(todo, next, pool.passed_over());
      if (!row) break;
      pool.start(*row);
    }
    if (pool.empty() || !pool.wait()) break;
  }
  if (left && stop_requested()) run.summary.interrupted = true;  // rows left unstarted
}

}  // namespace attnlab::nmt
