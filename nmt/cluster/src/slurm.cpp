#include "attnlab/nmt/cluster/slurm.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/core.h>
#include <fmt/format.h>
#include <xxhash.h>

#include "attnlab/error.h"
#include "attnlab/process.h"
#include "attnlab/nmt/io/file_util.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/search_state.h"
#include "attnlab/nmt/suite/suite_results.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

// 'text' for the shell, single quotes inside closed and reopened.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The suite's --set settings for a task's command line, each quoted.
std::string settings_args(const Suite& suite) {
  std::string out;
  for (const std::string& setting : suite.settings) out += " --set " + shell_quote(setting);
  return out;
}

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y%m%d-%H%M%S", &tm);
  return text;
}

fs::path slurm_dir(const std::string& run_dir) { return fs::path(run_dir) / "slurm"; }

// jobs.tsv: "job<TAB>task<TAB>row dir name" per submitted task.
std::map<std::string, std::string> read_jobs(const std::string& run_dir) {
  std::map<std::string, std::string> tasks;  // "41_2" -> row folder name
  std::ifstream in(slurm_dir(run_dir) / "jobs.tsv");
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string job, task, dir;
    if (std::getline(fields, job, '\t') && std::getline(fields, task, '\t') && std::getline(fields, dir, '\t'))
      tasks[job + "_" + task] = dir;
  }
  return tasks;
}

void append_jobs(const std::string& run_dir, const std::string& job_id, const std::vector<const SuiteRow*>& rows) {
  std::ofstream out(slurm_dir(run_dir) / "jobs.tsv", std::ios::app);
  for (std::size_t i = 0; i < rows.size(); ++i)
    out << job_id << '\t' << i << '\t' << fs::path(rows[i]->config.run_dir).filename().string() << '\t'
        << row_key(*rows[i]) << '\n';
  out.flush();
  ATTNLAB_CHECK(out.good(), "cannot write {}", (slurm_dir(run_dir) / "jobs.tsv").string());
}

}  // namespace

std::size_t SlurmSubmission::submitted() const {
  std::size_t n = 0;
  for (const auto& d : rows) n += d.reason.empty() ? 1 : 0;
  return n;
}

std::string slurm_job_name(const std::string& suite_name, const std::string& run_dir) {
  const std::string where = fs::weakly_canonical(fs::absolute(run_dir)).string();
  return fmt::format("attnlab-{}-{:06x}", suite_name, XXH3_64bits(where.data(), where.size()) & 0xFFFFFF);
}

std::string slurm_job_name(const Suite& suite) { return slurm_job_name(suite.name, suite.run_dir); }

std::string sbatch_script(const Suite& suite, const std::vector<const SuiteRow*>& rows,
                          const SlurmSubmitOptions& options) {
  ATTNLAB_CHECK(!rows.empty(), "sbatch_script: no rows");
  const SlurmSettings& s = options.settings;
  const std::string out_dir = fs::absolute(slurm_dir(suite.run_dir)).lexically_normal().string();
  std::string text = fmt::format(
      "#!/bin/bash\n"
      "# Suite {} as a Slurm job array, one task per row that needed work; written by\n"
      "# `attnlab run --slurm`. Each task runs the resumable row runner: a task cancelled, preempted\n"
      "# or out of time resumes from the row's last checkpoint when the suite is submitted again.\n",
      suite.name);
  auto option = [&](const std::string& line) { text += "#SBATCH " + line + "\n"; };
  option("--job-name=" + slurm_job_name(suite));
  option(fmt::format("--array=0-{}{}", rows.size() - 1, s.max_running > 0 ? fmt::format("%{}", s.max_running) : ""));
  option("--output=" + out_dir + "/%A_%a.out");
  option("--ntasks=1");
  // SIGTERM to the row two minutes before its time limit: it saves a checkpoint and stops.
  option("--signal=B:TERM@120");
  option("--requeue");
  if (!s.partition.empty()) option("--partition=" + s.partition);
  if (!s.account.empty()) option("--account=" + s.account);
  if (!s.qos.empty()) option("--qos=" + s.qos);
  if (!s.time.empty()) option("--time=" + s.time);
  if (s.gpus > 0) option(fmt::format("--gres=gpu:{}", s.gpus));
  if (!s.gres.empty()) option("--gres=" + s.gres);
  if (s.cpus > 0) option(fmt::format("--cpus-per-task={}", s.cpus));
  if (!s.mem.empty()) option("--mem=" + s.mem);
  for (const std::string& line : s.sbatch) option(line);
  text += "\nset -u\nrows=(";
  for (const SuiteRow* row : rows) text += " " + shell_quote(row_key(*row));
  text += " )\ndirs=(";
  for (const SuiteRow* row : rows) text += " " + shell_quote(row->config.run_dir);
  text += " )\n";
  text += "row=${rows[$SLURM_ARRAY_TASK_ID]}\ndir=${dirs[$SLURM_ARRAY_TASK_ID]}\n";
  text += "cd " + shell_quote(options.workdir) + "\n";
  for (const std::string& line : s.setup) text += line + "\n";
  text += "mkdir -p \"$dir\"\n";
  text += "echo \"== Slurm task ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID} on $(hostname): row $row\" >>\"$dir/run.log\"\n";
  text += "exec " + shell_quote(options.program) + " run " + shell_quote(fs::absolute(suite.source_file).string()) +
          " --row \"$row\" --quiet" + settings_args(suite) +
          // A search's task goes on with the rows promoted after their own tasks ended.
          std::string(suite.search ? (options.no_prune ? " --no-prune" : " --take-promoted") : "") +
          " >>\"$dir/run.log\" 2>&1\n";
  return text;
}

std::optional<std::map<std::string, SlurmTask>> queued_slurm_tasks(const std::string& suite_name,
                                                                   const std::string& run_dir) {
  if (!find_program("squeue")) return std::nullopt;
  ProcessResult r;
  try {
    r = run_program({"squeue", "--noheader", "--array", "--format=%i|%T|%r",
                     "--name=" + slurm_job_name(suite_name, run_dir)});
  } catch (const Error&) {
    return std::nullopt;
  }
  if (r.exit_code != 0) return std::nullopt;
  const std::map<std::string, std::string> jobs = read_jobs(run_dir);
  std::map<std::string, SlurmTask> tasks;
  std::stringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::stringstream fields(line);
    SlurmTask t;
    if (!std::getline(fields, t.id, '|') || !std::getline(fields, t.state, '|')) continue;
    std::getline(fields, t.reason, '|');
    if (auto it = jobs.find(t.id); it != jobs.end()) tasks[it->second] = t;
  }
  return tasks;
}

SlurmSubmission submit_to_slurm(const Suite& suite, const SlurmSubmitOptions& options) {
  SlurmSubmission submission;
  std::optional<FolderLock> lock;  // one submitter of the suite at a time
  if (!options.dry_run) lock.emplace(FolderLock::acquire(suite.run_dir, "suite folder"));
  const auto queued = queued_slurm_tasks(suite.name, suite.run_dir).value_or(std::map<std::string, SlurmTask>{});

  // Under a search, a row the rule holds at a rung has nothing to do (unless --no-prune).
  std::optional<SearchState> search;
  if (suite.search && !options.no_prune) search = read_search_state(search_state_path(suite));
  std::vector<const SuiteRow*> todo;
  for (const SuiteRow& row : suite.rows) {
    if (!options.rows.empty() && std::find(options.rows.begin(), options.rows.end(), row.name) == options.rows.end())
      continue;
    SubmitDecision d{&row, ""};
    const std::string folder = fs::path(row.config.run_dir).filename().string();
    if (!row.skipped.empty()) d.reason = "skipped (unsupported = \"skip\"): " + row.skipped;
    else if (!row.same_as.empty()) d.reason = "the same run as " + row.same_as;
    else if (fs::exists(fs::path(row.config.run_dir) / "result.json")) d.reason = "done";
    else if (auto it = queued.find(folder); it != queued.end())
      d.reason = fmt::format("{} (Slurm task {})", it->second.state == "PENDING" ? "queued" : "in Slurm",
                             it->second.id);
    else if (auto holder = FolderLock::holder(row.config.run_dir))
      d.reason = fmt::format("running (pid {} on {})", holder->pid, holder->host);
    else if (const SearchRowState* r = search ? search->find_dir(folder) : nullptr; r && r->held())
      d.reason = fmt::format("{} at rung {} by the search",
                             search_standing_name(search->standing(r->key, false)), r->allowed);
    else todo.push_back(&row);
    submission.rows.push_back(d);
  }
  if (todo.empty()) return submission;
  submission.script = sbatch_script(suite, todo, options);
  if (options.dry_run) return submission;

  ATTNLAB_CHECK(find_program("sbatch").has_value(),
                "`attnlab run --slurm` needs Slurm's sbatch on PATH (Debian: slurm-client); --dry-run prints the "
                "script without it");
  fs::create_directories(slurm_dir(suite.run_dir));
  // The state a report reads, with every row pending or done.
  SuiteState state = make_suite_state(suite);
  for (SuiteRowState& entry : state.rows)
    if (fs::exists(fs::path(suite.run_dir) / entry.dir / "result.json")) entry.status = RowStatus::kDone;
  write_suite_state((fs::path(suite.run_dir) / "suite.json").string(), state);
  submission.script_path = (slurm_dir(suite.run_dir) / fmt::format("array-{}.sh", timestamp())).string();
  detail::write_file_atomic(submission.script_path, submission.script);
  const ProcessResult r = run_program({"sbatch", "--parsable", submission.script_path});
  if (r.exit_code != 0)
    throw Error(fmt::format("sbatch refused {} (exit status {}): {}", submission.script_path, r.exit_code,
                            r.err.empty() ? r.out : r.err));
  submission.job_id = r.out.substr(0, r.out.find_first_of(";\n"));
  append_jobs(suite.run_dir, submission.job_id, todo);
  return submission;
}

}  // namespace attnlab::nmt
