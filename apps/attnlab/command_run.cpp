// attnlab run SUITE.toml: trains and evaluates every row of a suite, resumably.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/checkpoint/checkpoint_store.h"
#include "attnlab/nmt/cluster/slurm.h"
#include "attnlab/nmt/io/file_util.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/suite_runner.h"
#include "attnlab/nmt/train/trainer.h"

namespace attnlab::app {
namespace {

std::string self_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  ATTNLAB_CHECK(n > 0, "cannot find the attnlab program (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

// attnlab run SUITE --slurm: the rows that need work as one job array.
int submit_slurm(const std::string& file, const std::vector<std::string>& settings, const std::vector<std::string>& rows,
                 const nmt::SlurmSettings& flags, const CLI::App& app, bool dry_run, bool no_prune) {
  nmt::Suite suite = nmt::load_suite(file, settings);
  load_suite_plugins(suite);
  nmt::SlurmSubmitOptions o;
  o.settings = suite.slurm;
  auto given = [&](const char* flag) { return app.count(flag) > 0; };
  if (given("--partition")) o.settings.partition = flags.partition;
  if (given("--account")) o.settings.account = flags.account;
  if (given("--qos")) o.settings.qos = flags.qos;
  if (given("--time")) o.settings.time = flags.time;
  if (given("--gpus")) o.settings.gpus = flags.gpus;
  if (given("--gres")) o.settings.gres = flags.gres;
  if (given("--cpus")) o.settings.cpus = flags.cpus;
  if (given("--mem")) o.settings.mem = flags.mem;
  if (given("--max-running")) o.settings.max_running = flags.max_running;
  o.settings.sbatch.insert(o.settings.sbatch.end(), flags.sbatch.begin(), flags.sbatch.end());
  o.settings.setup.insert(o.settings.setup.end(), flags.setup.begin(), flags.setup.end());
  for (const std::string& name : rows) {
    const bool known = std::any_of(suite.rows.begin(), suite.rows.end(), [&](const auto& r) { return r.name == name; });
    if (!known) throw Error(fmt::format("suite {} has no row '{}'", suite.name, name));
  }
  o.rows = rows;
  o.program = self_path();
  o.workdir = std::filesystem::current_path().string();
  o.dry_run = dry_run;
  o.no_prune = no_prune;
  const nmt::SlurmSubmission s = nmt::submit_to_slurm(suite, o);
  for (const auto& d : s.rows)
    fmt::print(stderr, "{} (seed {}): {}\n", d.row->name, d.row->seed, d.reason.empty() ? "submitted" : d.reason);
  if (s.script.empty()) {
    fmt::print("suite {}: nothing to submit (every row is done, running or queued)\n", suite.name);
    return 0;
  }
  if (dry_run) {
    fmt::print("{}", s.script);
    return 0;
  }
  fmt::print("suite {}: {} row(s) submitted as Slurm job array {} ({})\nstatus: attnlab status {}\n", suite.name,
             s.submitted(), s.job_id, s.script_path, suite.run_dir);
  return 0;
}

struct RunFlags {
  std::string file, only_row, device;
  std::vector<std::string> settings;  // --set KEY=VALUE
  std::int64_t threads = 0;  // the child's share of the cores (--jobs)
  nmt::SuiteRunOptions options;
  bool slurm = false, dry_run = false, take_promoted = false, outcome_exit_codes = false;
  nmt::SlurmSettings slurm_flags;  // the command line's Slurm settings, over [suite.slurm]
  CLI::App* app = nullptr;
};

int run_suite_command(RunFlags& f);

}  // namespace

Command run_command(CLI::App& root) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* app = f->app = root.add_subcommand(
      "run", "train and evaluate every row of a suite (finished rows are skipped, an interrupted row resumes, a "
             "changed row is retrained); with --slurm, submit the rows that need work as one Slurm job array");
  app->add_option("SUITE", f->file, "the suite's TOML file")->required();
  add_set_option(*app, f->settings, "the base of every row (a row's own changes still apply)");
  app->add_option("--rows", f->options.rows, "only these rows (comma-separated names)")
      ->delimiter(',')
      ->type_name("ROWS");
  app->add_option("--jobs", f->options.jobs, "rows trained at once, each in its own process")
      ->check(whole_number(1, 1024))
      ->type_name("N");
  app->add_option("--devices", f->options.devices, "devices handed to the rows in turn (comma-separated)")
      ->delimiter(',')
      ->check(device_name())
      ->type_name("DEVICES");
  app->add_option("--gpus-per-row", f->options.gpus_per_row,
                  "GPUs each row on cuda gets of its own under --jobs (more rows than GPUs share them round-robin)")
      ->check(whole_number(1, 1024))
      ->type_name("N");
  app->add_option("--threads-per-row", f->options.threads_per_row,
                  "CPU threads of each row that leaves experiment.threads at 0 under --jobs (default: the cores divided "
                  "among the jobs)")
      ->check(whole_number(1, 1 << 16))
      ->type_name("N");
  app->add_flag("--quiet", [o = &f->options](std::int64_t) { o->progress = false; }, "no progress lines");
  app->add_flag("--no-prune", f->options.no_prune,
                "under the suite's [search]: train the rows to their end whatever the search decided (with --rows, "
                "to finish a stopped row from its checkpoint)");
  // One row in a child process (--jobs, Slurm tasks): not for people.
  app->add_option("--row", f->only_row, "")->group("");
  app->add_option("--threads", f->threads, "")->check(whole_number(1, 1 << 16))->group("");
  // A Slurm task of a search: after its row, the rows the search promoted that no process trains.
  app->add_flag("--take-promoted", f->take_promoted, "")->group("");
  // A --jobs child: the row's turn's end as the exit status (nmt::row_end_exit_code).
  app->add_flag("--outcome-exit-codes", f->outcome_exit_codes, "")->group("");
  add_device_option(*app, f->device, "")->group("");
  // Slurm: the command line over [suite.slurm].
  auto* slurm = app->add_flag("--slurm", f->slurm, "submit as a Slurm job array (options below override [suite.slurm])");
  auto& s = f->slurm_flags;
  const char* group = "Slurm (with --slurm)";
  app->add_flag("--dry-run", f->dry_run,
                "print the plan, run nothing: what each row would do (train, resume, nothing), or with --slurm the "
                "sbatch script");
  app->add_option("--partition", s.partition, "partition")->needs(slurm)->group(group);
  app->add_option("--account", s.account, "account")->needs(slurm)->group(group);
  app->add_option("--qos", s.qos, "quality of service")->needs(slurm)->group(group);
  app->add_option("--time", s.time, "time limit per task (Slurm's format, e.g. 1-00:00:00)")->needs(slurm)->group(group);
  app->add_option("--gpus", s.gpus, "GPUs per task")->check(whole_number(0, 1024))->needs(slurm)->group(group);
  app->add_option("--gres", s.gres, "generic resources per task")->needs(slurm)->group(group);
  app->add_option("--cpus", s.cpus, "CPUs per task")->check(whole_number(0, 1 << 20))->needs(slurm)->group(group);
  app->add_option("--mem", s.mem, "memory per task (e.g. 16G)")->needs(slurm)->group(group);
  app->add_option("--max-running", s.max_running, "tasks running at once (0: no limit)")
      ->check(whole_number(0, 1 << 20))
      ->needs(slurm)
      ->group(group);
  repeated(app->add_option("--sbatch", s.sbatch, "a further #SBATCH option (repeatable)"))->needs(slurm)->group(group);
  repeated(app->add_option("--setup", s.setup, "a shell line run before the task (repeatable)"))->needs(slurm)->group(group);
  return {app, [f] { return run_suite_command(*f); }};
}

namespace {

// run --dry-run: what each row (of --rows, when given) would do, nothing run. Under a search (and
// without --no-prune) a row trains only to the rung the search lets it reach: a row not yet
// measured, to the first rung.
int print_plan(const nmt::Suite& suite, const nmt::SuiteRunOptions& options) {
  fmt::print("suite {}: {} row(s) in {}; {} at a time (dry run: nothing is trained)\n", suite.name, suite.rows.size(),
             suite.run_dir, options.jobs);
  const bool pruned = suite.search && !options.no_prune;
  std::int64_t first_rung = 0;
  if (pruned) {
    const std::vector<std::int64_t> rungs = nmt::search_rungs(*suite.search);
    first_rung = rungs.front();
    fmt::print("search: rows go on past each rung (steps {}) only as the search promotes them\n", fmt::join(rungs, ", "));
  }
  std::int64_t to_train = 0;
  for (const nmt::SuiteRow& row : suite.rows) {
    if (!options.rows.empty() &&
        std::find(options.rows.begin(), options.rows.end(), row.name) == options.rows.end())
      continue;
    std::string action;
    const std::vector<std::int64_t> saved = nmt::checkpoint_steps(row.config.run_dir);
    const std::int64_t steps = row.config.training.max_steps, last = saved.empty() ? 0 : saved.back();
    if (!row.skipped.empty()) action = "skip (unsupported = \"skip\"): " + row.skipped;
    else if (!row.same_as.empty()) action = "nothing: the same run as row " + row.same_as;
    else if (std::filesystem::exists(std::filesystem::path(row.config.run_dir) / "result.json")) action = "nothing: finished";
    else if (last > 0 && pruned) action = fmt::format("resume at step {}, up to the rung the search allows", last), ++to_train;
    else if (last > 0) action = fmt::format("resume at step {} of {}", last, steps), ++to_train;
    else if (pruned) action = fmt::format("train to the first rung, {} of {} steps", first_rung, steps), ++to_train;
    else action = fmt::format("train {} steps", steps), ++to_train;
    fmt::print("  {} (seed {}) -> {}: {}\n", row.name, row.seed, row.config.run_dir, action);
  }
  fmt::print("{} row(s) to train\n", to_train);
  return 0;
}

int run_suite_command(RunFlags& f) {
  const std::string& file = f.file;
  const std::string& only_row = f.only_row;
  const std::string& device = f.device;
  nmt::SuiteRunOptions& options = f.options;
  if (f.slurm)
    return submit_slurm(file, f.settings, options.rows, f.slurm_flags, *f.app, f.dry_run, options.no_prune);
  for (const auto& d : options.devices) check_device_available(Device::parse(d));
  if (!device.empty()) check_device_available(Device::parse(device));
  nmt::Suite suite = nmt::load_suite(file, f.settings);
  // Every row's own device, unless --devices replaces them: before any row starts.
  if (options.devices.empty() && device.empty())
    for (const auto& row : suite.rows) {
      try {
        check_device_available(Device::parse(row.config.device));
      } catch (const DeviceError& e) {
        throw DeviceError(fmt::format("{}: row {}: {}", row.position, row.name, e.what()));
      }
    }
  // Rows a plugin cannot serve: the suite refused, or those rows skipped (their `unsupported`).
  const Registry& registry = load_suite_plugins(suite);
  if (f.dry_run) return print_plan(suite, options);
  nmt::install_stop_signal_handlers();

  if (!only_row.empty()) {
    for (auto& row : suite.rows) {
      if (nmt::row_key(row) != only_row) continue;
      if (!row.skipped.empty())
        throw Error(fmt::format("row {} is skipped (unsupported = \"skip\"): {}", only_row, row.skipped));
      if (!device.empty()) row.config.device = Device::parse(device).str();
      if (f.threads > 0) row.config.threads = f.threads;  // its share under --jobs (the folder stays)
      // The trainer's log lines go to stderr: the row's run.log under --jobs and Slurm.
      const nmt::RowRunOptions row_options{options.progress, [](const std::string& line) {
                                             fmt::print(stderr, "{}\n", line);
                                           },
                                           options.no_prune};
      if (f.outcome_exit_codes) {
        const nmt::RowTurn turn = nmt::run_row_turn(suite, row, registry, row_options);
        if (!turn.error.empty()) fmt::print(stderr, "{}\n", turn.error);
        return nmt::row_end_exit_code(turn.end);
      }
      // A task: a row lost to another process or held by the search is no failure; a failed row,
      // its own or a promoted one, is.
      const nmt::SuiteRunSummary s = nmt::run_task(suite, row, registry, row_options, f.take_promoted);
      if (s.interrupted) return 130;
      return s.failed > 0 ? 4 : 0;
    }
    throw Error(fmt::format("suite {} has no row {}", suite.name, only_row));
  }
  if (options.jobs > 1) options.program = self_path();
  // One runner per suite folder (rows run by a scheduler lock their own folders).
  const nmt::FolderLock lock = nmt::FolderLock::acquire(suite.run_dir, "suite folder");
  fmt::print(stderr, "suite {}: {} row(s) in {}\n", suite.name, suite.rows.size(), suite.run_dir);
  const nmt::SuiteRunSummary s = nmt::run_suite(suite, registry, options);
  std::string others;
  if (s.same) others += fmt::format(", {} the same run as another row", s.same);
  if (s.unsupported) others += fmt::format(", {} skipped (unsupported)", s.unsupported);
  fmt::print("suite {}: {} trained, {} already finished, {} failed{}{}\nreport: attnlab report {}\n", suite.name, s.done,
             s.skipped, s.failed, others, s.interrupted ? "; interrupted (run again to resume)" : "", suite.run_dir);
  if (s.interrupted) return 130;
  return s.failed > 0 ? 4 : 0;
}

}  // namespace
}  // namespace attnlab::app
