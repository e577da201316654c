// attnlab run SUITE.toml: trains and evaluates every row of a suite, resumably.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/cluster/slurm.h"
#include "attnlab/nmt/io/file_util.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/suite_runner.h"
#include "attnlab/nmt/train/trainer.h"

namespace attnlab::app {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string self_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  ATTNLAB_CHECK(n > 0, "cannot find the attnlab program (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

// attnlab run SUITE --slurm: the rows that need work as one job array.
int submit_slurm(const std::string& file, const std::vector<std::string>& rows, const nmt::SlurmSettings& flags,
                 const std::vector<std::string>& set_flags, bool dry_run) {
  nmt::Suite suite = nmt::load_suite(file);
  nmt::SlurmSubmitOptions o;
  o.settings = suite.slurm;
  auto given = [&](const char* flag) { return std::find(set_flags.begin(), set_flags.end(), flag) != set_flags.end(); };
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

}  // namespace

int command_run(const Args& args) {
  constexpr const char* kUsage =
      "usage: attnlab run SUITE.toml [--rows A1,E] [--jobs N] [--devices cuda:0,cuda:1] [--quiet]\n"
      "       attnlab run SUITE.toml --slurm [--dry-run] [--rows A1,E] [--partition P] [--account A] [--qos Q]\n"
      "                  [--time T] [--gpus N] [--gres G] [--cpus N] [--mem M] [--max-running N]\n"
      "                  [--sbatch OPTION]... [--setup LINE]...";
  std::string file, only_row, device;
  nmt::SuiteRunOptions options;
  bool slurm = false, dry_run = false;
  nmt::SlurmSettings flags;  // the command line's Slurm settings, over [suite.slurm]
  std::vector<std::string> set_flags;
  auto count = [](const std::string& flag, const std::string& text, std::int64_t min) {
    std::size_t used = 0;
    std::int64_t n = 0;
    try {
      n = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || text.empty() || n < min)
      throw Error(fmt::format("{} takes a whole number >= {}, got '{}'", flag, min, text));
    return n;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error(fmt::format("{} needs a value\n{}", a, kUsage));
      set_flags.push_back(a);
      return args[++i];
    };
    if (a == "--rows") options.rows = split_list(value());
    else if (a == "--jobs") options.jobs = count(a, value(), 1);
    else if (a == "--devices") options.devices = split_list(value());
    else if (a == "--quiet") options.progress = false;
    else if (a == "--slurm") slurm = true;
    else if (a == "--dry-run") dry_run = true;
    else if (a == "--partition") flags.partition = value();
    else if (a == "--account") flags.account = value();
    else if (a == "--qos") flags.qos = value();
    else if (a == "--time") flags.time = value();
    else if (a == "--gpus") flags.gpus = count(a, value(), 0);
    else if (a == "--gres") flags.gres = value();
    else if (a == "--cpus") flags.cpus = count(a, value(), 0);
    else if (a == "--mem") flags.mem = value();
    else if (a == "--max-running") flags.max_running = count(a, value(), 0);
    else if (a == "--sbatch") flags.sbatch.push_back(value());
    else if (a == "--setup") flags.setup.push_back(value());
    else if (a == "--row") only_row = value();      // internal: one row, in a child process
    else if (a == "--device") device = value();     // internal: that row's device
    else if (file.empty() && !a.starts_with("--")) file = a;
    else throw Error(fmt::format("unknown argument '{}'\n{}", a, kUsage));
  }
  if (file.empty()) throw Error(kUsage);
  for (const std::string& f : set_flags)
    if (!slurm && f != "--rows" && f != "--jobs" && f != "--devices" && f != "--row" && f != "--device")
      throw Error(fmt::format("{} is a Slurm option: add --slurm\n{}", f, kUsage));
  if (dry_run && !slurm) throw Error(fmt::format("--dry-run goes with --slurm\n{}", kUsage));
  if (slurm) return submit_slurm(file, options.rows, flags, set_flags, dry_run);
  for (const auto& d : options.devices) check_device_available(Device::parse(d));
  if (!device.empty()) check_device_available(Device::parse(device));
  nmt::Suite suite = nmt::load_suite(file);
  // Every row's own device, unless --devices replaces them: before any row starts.
  if (options.devices.empty() && device.empty())
    for (const auto& row : suite.rows) {
      try {
        check_device_available(Device::parse(row.config.device));
      } catch (const DeviceError& e) {
        throw DeviceError(fmt::format("{}: row {}: {}", row.position, row.name, e.what()));
      }
    }
  std::set<std::string> paths;
  for (const auto& row : suite.rows) paths.insert(row.config.plugin_paths.begin(), row.config.plugin_paths.end());
  const Registry& registry = load_plugins({paths.begin(), paths.end()});
  nmt::install_stop_signal_handlers();

  if (!only_row.empty()) {
    for (auto& row : suite.rows) {
      if (nmt::row_key(row) != only_row) continue;
      if (!device.empty()) row.config.device = Device::parse(device).str();
      // Why the row failed, for `attnlab status` (no parent records it under a scheduler).
      const std::string error_file = row.config.run_dir + "/row-error.txt";
      try {
        // The trainer's log lines go to stderr: the row's run.log under --jobs and Slurm.
        nmt::run_row(suite, row, registry, options.progress, [](const std::string& line) {
          fmt::print(stderr, "{}\n", line);
        });
      } catch (const nmt::RowInterrupted& e) {
        fmt::print(stderr, "{}\n", e.what());
        return 130;
      } catch (const nmt::FolderInUse&) {
        throw;  // another process has the row: nothing failed
      } catch (const std::exception& e) {
        nmt::detail::write_file_atomic(error_file, std::string(e.what()) + "\n");
        throw;
      }
      std::filesystem::remove(error_file);
      return 0;
    }
    throw Error(fmt::format("suite {} has no row {}", suite.name, only_row));
  }
  if (options.jobs > 1) options.program = self_path();
  // One runner per suite folder (rows run by a scheduler lock their own folders).
  const nmt::FolderLock lock = nmt::FolderLock::acquire(suite.run_dir, "suite folder");
  fmt::print(stderr, "suite {}: {} row(s) in {}\n", suite.name, suite.rows.size(), suite.run_dir);
  const nmt::SuiteRunSummary s = nmt::run_suite(suite, registry, options);
  fmt::print("suite {}: {} trained, {} already finished, {} failed{}\nreport: attnlab report {}\n", suite.name, s.done,
             s.skipped, s.failed, s.interrupted ? "; interrupted (run again to resume)" : "", suite.run_dir);
  if (s.interrupted) return 130;
  return s.failed > 0 ? 4 : 0;
}

}  // namespace attnlab::app
