// The executor of run_suite's --jobs: one child process per row (`attnlab run SUITE --row NAME@SEED`),
// at most `jobs` alive, job slot k with its share of the machine (or on devices[k % devices.size()]),
// started with posix_spawn and waited for among this run's own children only.
#include <filesystem>
#include <fstream>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "attnlab/device.h"
#include "attnlab/error.h"
#include "attnlab/process.h"
#include "attnlab/threads.h"
#include "attnlab/nmt/suite/machine_share.h"
#include "row_scheduler.h"

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

// The child's command: the same suite file (with the same --set settings), this row only, quiet (its log is run.log), its turn's
// end as its exit status, with the threads of its share; --device only where the share moves the
// row off its own device. OpenMP and OpenBLAS size their pools from the environment before the row
// sets its threads.
ProgramLaunch row_launch(const SuiteRun& run, const SuiteRow& row, const RowResources& share) {
  ProgramLaunch launch;
  launch.argv = {run.options.program, "run", run.suite.source_file, "--row", row_key(row), "--quiet",
                 "--outcome-exit-codes", "--threads", std::to_string(share.threads)};
  if (share.device != row.config.device) launch.argv.insert(launch.argv.end(), {"--device", share.device});
  if (run.options.no_prune) launch.argv.push_back("--no-prune");
  for (const std::string& setting : run.suite.settings) launch.argv.insert(launch.argv.end(), {"--set", setting});
  launch.stderr_path = (fs::path(row.config.run_dir) / "run.log").string();
  const std::string threads = std::to_string(share.threads);
  launch.env = {{"OMP_NUM_THREADS", threads}, {"OPENBLAS_NUM_THREADS", threads}};
  if (!share.visible_gpus.empty()) launch.env.emplace_back("CUDA_VISIBLE_DEVICES", share.visible_gpus);
  return launch;
}

// Why a child's row failed: the first line of the row's row-error.txt, which the child writes, or
// (a crash, a child that could not start the row) its exit status.
std::string child_failure(const SuiteRow& row, int code) {
  const fs::path dir(row.config.run_dir);
  std::string why = fmt::format("exit status {}", code);
  if (std::ifstream in(dir / "row-error.txt"); in) {
    std::string line;
    if (std::getline(in, line) && !line.empty()) why = line;
  }
  return fmt::format("{} (see {}/run.log)", why, row.config.run_dir);
}

// The children alive and the job slots they hold. A slot freed by a child that ended goes to the
// next row, so that slot k keeps its share of the machine whichever row holds it.
class ChildProcessRows : public RowExecutor {
 public:
  ChildProcessRows(SuiteRun& run, MachinePlan plan)
      : run_(run), plan_(std::move(plan)), slot_busy_(static_cast<std::size_t>(run.options.jobs), false) {}

  std::size_t slots() const override { return slot_busy_.size(); }

  void start(const SuiteRow& row) override {
    std::size_t slot = 0;
    while (slot_busy_[slot]) ++slot;
    const RowResources share = slot_resources(row, plan_, slot, run_.options);
    const ProgramLaunch launch = row_launch(run_, row, share);
    fs::create_directories(row.config.run_dir);
    const pid_t pid = start_program(launch);
    slot_busy_[slot] = true;
    children_[pid] = {&row, slot};
    run_.log(fmt::format("== {} (seed {}) started on {}{}, {} thread(s) -> {} (log: {})", row.name, row.seed,
                         share.device,
                         share.visible_gpus.empty() ? std::string() : " (GPUs " + share.visible_gpus + ")",
                         share.threads, row.config.run_dir, launch.stderr_path));
  }

  Ended wait() override {
    std::vector<pid_t> pids;
    for (const auto& [pid, child] : children_) pids.push_back(pid);
    const EndedProgram ended = wait_for_one_of(pids);
    const auto it = children_.find(ended.pid);
    const Child child = it->second;
    children_.erase(it);
    slot_busy_[child.slot] = false;
    RowTurn turn;
    turn.end = row_end_of_exit_code(ended.exit_code);
    if (turn.end == RowEnd::failed) turn.error = child_failure(*child.row, ended.exit_code);
    if (turn.end == RowEnd::lost) turn.error = fmt::format("see {}/run.log", child.row->config.run_dir);
    return {child.row, turn};
  }

 private:
  struct Child {
    const SuiteRow* row;
    std::size_t slot;
  };
  SuiteRun& run_;
  const MachinePlan plan_;
  std::map<pid_t, Child> children_;
  std::vector<bool> slot_busy_;
};

}  // namespace

std::unique_ptr<RowExecutor> child_process_rows(SuiteRun& run) {
  ATTNLAB_CHECK(!run.options.program.empty(), "run_suite: jobs > 1 needs the attnlab program path");
  MachinePlan plan = plan_machine(run.options);
  run.log(plan.describe());
  return std::make_unique<ChildProcessRows>(run, std::move(plan));
}

}  // namespace attnlab::nmt
