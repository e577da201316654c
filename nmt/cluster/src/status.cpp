#include "attnlab/nmt/cluster/status.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/error.h"
#include "attnlab/nmt/checkpoint/checkpoint_store.h"
#include "attnlab/nmt/cluster/slurm.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "attnlab/nmt/train/training_summary.h"
#include "status_search.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> last_lines(const fs::path& path, std::size_t n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back(line);
    if (lines.size() > n) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

std::string first_line_of(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::int64_t max_steps_of(const fs::path& row_dir) {
  const fs::path config = row_dir / "config.toml";
  if (!fs::exists(config)) return 0;
  try {
    return load_experiment(config.string()).training.max_steps;
  } catch (const std::exception&) {
    return 0;
  }
}

RowProgress row_progress(const std::string& name, std::uint64_t seed, const std::string& dir, std::int64_t max_steps) {
  RowProgress r;
  r.name = name;
  r.seed = seed;
  r.dir = dir;
  r.max_steps = max_steps;
  return r;
}

// The row's phase from its folder, the folder lock and the queue.
void inspect(RowProgress& r, const std::map<std::string, SlurmTask>& queue, const std::string& failure) {
  const fs::path dir(r.dir);
  if (r.max_steps == 0) r.max_steps = max_steps_of(dir);
  const TrainingSummary summary = read_training_summary(dir / "metrics.jsonl");
  r.step = summary.last_step;
  if (!summary.dev_ppl.empty()) r.dev_ppl = summary.dev_ppl.back().value;
  r.seconds_per_step = summary.seconds_per_step;
  const auto task = queue.find(dir.filename().string());
  const std::string task_text =
      task == queue.end() ? std::string()
                          : fmt::format("Slurm task {}{}", task->second.id,
                                        task->second.reason.empty() || task->second.reason == "None"
                                            ? std::string()
                                            : fmt::format(" ({})", task->second.reason));
  if (fs::exists(dir / "result.json")) {
    r.phase = RowPhase::kDone;
    try {
      const RowResult result = read_row_result((dir / "result.json").string());
      r.dev_ppl = result.dev_ppl;
      r.bleu = result.bleu;
      r.step = result.steps;
    } catch (const std::exception& e) {
      r.error = e.what();
    }
  } else if (auto holder = FolderLock::holder(r.dir)) {
    r.phase = RowPhase::kRunning;
    r.where = fmt::format("pid {} on {}", holder->pid, holder->host);
    if (!task_text.empty()) r.where += ", " + task_text;
    if (summary.seconds_per_step > 0 && r.max_steps > r.step)
      r.eta_seconds = summary.seconds_per_step * static_cast<double>(r.max_steps - r.step);
  } else if (task != queue.end()) {
    // In the queue, or started by Slurm and not yet holding its folder.
    r.phase = task->second.state == "PENDING" ? RowPhase::kQueued : RowPhase::kRunning;
    r.where = task_text;
  } else if (fs::exists(dir / "row-error.txt") || !failure.empty()) {
    r.phase = RowPhase::kFailed;
    r.error = fs::exists(dir / "row-error.txt") ? first_line_of(dir / "row-error.txt") : failure;
    r.log_tail = last_lines(dir / "run.log", 3);
  } else if (fs::exists(dir / "metrics.jsonl") || fs::exists(dir / "checkpoints")) {
    // Where it resumes: its newest checkpoint (the log may be a few steps behind it).
    r.phase = RowPhase::kStopped;
    if (const auto steps = checkpoint_steps(dir); !steps.empty()) r.step = std::max(r.step, steps.back());
    r.log_tail = last_lines(dir / "run.log", 3);
  }
}

}  // namespace

std::string_view row_phase_name(RowPhase phase) {
  switch (phase) {
    case RowPhase::kDone: return "done";
    case RowPhase::kRunning: return "running";
    case RowPhase::kQueued: return "queued";
    case RowPhase::kFailed: return "failed";
    case RowPhase::kStopped: return "stopped";
    case RowPhase::kNotStarted: return "not started";
    case RowPhase::kSkipped: return "skipped";
    case RowPhase::kHeld: return "held";
  }
  return "?";
}

StatusReport read_status(const std::string& target) {
  StatusReport report;
  std::map<std::string, std::string> failures;  // row folder -> suite.json's error
  std::map<std::string, std::int64_t> max_steps;
  bool of_suite = true;  // a suite's rows (they may be under a search), not one run folder
  if (fs::is_regular_file(target)) {
    const Suite suite = load_suite(target);
    report.name = suite.name;
    report.run_dir = suite.run_dir;
    // Which rows a run skipped needs the plugins: the last run's suite.json says.
    std::optional<SuiteState> last;
    if (const fs::path state = fs::path(suite.run_dir) / "suite.json"; fs::exists(state))
      last = read_suite_state(state.string());
    for (const SuiteRow& row : suite.rows) {
      report.rows.push_back(row_progress(row.name, row.seed, row.config.run_dir, row.config.training.max_steps));
      report.rows.back().same_as = row.same_as;
      if (const SuiteRowState* s = last ? last->find(row.name, row.seed) : nullptr; s && s->status == RowStatus::kSkipped)
        report.rows.back().phase = RowPhase::kSkipped, report.rows.back().error = s->error;
    }
  } else if (fs::exists(fs::path(target) / "suite.json")) {
    const SuiteState state = read_suite_state((fs::path(target) / "suite.json").string());
    report.name = state.name;
    report.run_dir = target;
    for (const SuiteRowState& row : state.rows) {
      report.rows.push_back(row_progress(row.name, row.seed, (fs::path(target) / row.dir).string(), 0));
      report.rows.back().same_as = row.same_as;
      if (row.status == RowStatus::kSkipped) report.rows.back().phase = RowPhase::kSkipped, report.rows.back().error = row.error;
      if (row.status == RowStatus::kFailed) failures[row.dir] = row.error;
    }
  } else if (fs::exists(fs::path(target) / "config.toml")) {
    report.name = fs::path(target).lexically_normal().filename().string();
    report.run_dir = target;
    report.rows.push_back(row_progress(report.name, 1, target, 0));
    of_suite = false;
  } else {
    throw Error(fmt::format("{} is neither a suite file, a suite's run folder (suite.json) nor a run folder "
                            "(config.toml)",
                            target));
  }
  const auto queue = queued_slurm_tasks(report.name, report.run_dir);
  report.slurm = queue.has_value();
  const std::map<std::string, SlurmTask> by_folder = queue.value_or(std::map<std::string, SlurmTask>{});
  for (RowProgress& r : report.rows) {
    if (r.phase == RowPhase::kSkipped) continue;
    const std::string folder = fs::path(r.dir).filename().string();
    inspect(r, by_folder, failures.count(folder) ? failures[folder] : std::string());
  }
  if (of_suite) add_search_standings(report);
  return report;
}

std::string format_status(const StatusReport& report) {
  std::map<RowPhase, int> counts;
  for (const RowProgress& r : report.rows) ++counts[r.phase];
  std::vector<std::string> parts;
  for (RowPhase p : {RowPhase::kDone, RowPhase::kRunning, RowPhase::kQueued, RowPhase::kFailed, RowPhase::kStopped,
                     RowPhase::kHeld, RowPhase::kNotStarted, RowPhase::kSkipped})
    if (counts[p] > 0) parts.push_back(fmt::format("{} {}", counts[p], row_phase_name(p)));
  std::string out = fmt::format("{} ({}): {} row(s): {}{}\n", report.name, report.run_dir, report.rows.size(),
                                fmt::join(parts, ", "), report.slurm ? "; Slurm queue read" : "");
  if (!report.search.empty()) out += fmt::format("search: {}\n", report.search);
  std::size_t name_width = 4, search_width = 6;
  for (const RowProgress& r : report.rows) name_width = std::max(name_width, r.name.size());
  for (const RowProgress& r : report.rows) search_width = std::max(search_width, r.search.size());
  // Under a search, its column comes before `where`.
  const auto search_cell = [&](const std::string& text) {
    return report.search.empty() ? std::string() : fmt::format("{:<{}}  ", text, search_width);
  };
  out += fmt::format("{:<{}}  {:>4}  {:<11}  {:>13}  {:>7}  {:>8}  {:>6}  {}{}\n", "row", name_width, "seed", "state",
                     "step", "ETA", "dev ppl", "BLEU", search_cell("search"), "where");
  for (const RowProgress& r : report.rows) {
    const std::string step = r.max_steps > 0 ? fmt::format("{}/{}", r.step, r.max_steps)
                                             : (r.step > 0 ? std::to_string(r.step) : std::string("-"));
    out += fmt::format("{:<{}}  {:>4}  {:<11}  {:>13}  {:>7}  {:>8}  {:>6}  {}{}\n", r.name, name_width, r.seed,
                       row_phase_name(r.phase), step, r.eta_seconds ? duration_str(*r.eta_seconds) : "-",
                       r.dev_ppl ? fmt::format("{:.3f}", *r.dev_ppl) : "-",
                       r.bleu ? fmt::format("{:.2f}", *r.bleu) : "-", search_cell(r.search),
                       r.same_as.empty() ? r.where
                                         : fmt::format("same run as {}{}", r.same_as, r.where.empty() ? "" : "; " + r.where));
    if (!r.error.empty()) out += fmt::format("    {}: {}\n", r.phase == RowPhase::kSkipped ? "why" : "error", r.error);
    for (const std::string& line : r.log_tail) out += fmt::format("    | {}\n", line);
  }
  return out;
}

}  // namespace attnlab::nmt
