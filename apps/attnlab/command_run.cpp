// attnlab run SUITE.toml: trains and evaluates every row of a suite, resumably.
#include <unistd.h>

#include <climits>
#include <set>
#include <sstream>

#include <fmt/core.h>

#include "attnlab/commands.h"
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

}  // namespace

int command_run(const Args& args) {
  constexpr const char* kUsage =
      "usage: attnlab run SUITE.toml [--rows A1,E] [--jobs N] [--devices cuda:0,cuda:1] [--quiet]";
  std::string file, only_row, device;
  nmt::SuiteRunOptions options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error(fmt::format("{} needs a value\n{}", a, kUsage));
      return args[++i];
    };
    if (a == "--rows") options.rows = split_list(value());
    else if (a == "--jobs") options.jobs = std::stoll(value());
    else if (a == "--devices") options.devices = split_list(value());
    else if (a == "--quiet") options.progress = false;
    else if (a == "--row") only_row = value();      // internal: one row, in a child process
    else if (a == "--device") device = value();     // internal: that row's device
    else if (file.empty() && !a.starts_with("--")) file = a;
    else throw Error(fmt::format("unknown argument '{}'\n{}", a, kUsage));
  }
  if (file.empty()) throw Error(kUsage);
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
      if (row.name + "@" + std::to_string(row.seed) != only_row) continue;
      if (!device.empty()) row.config.device = Device::parse(device).str();
      try {
        nmt::run_row(suite, row, registry, options.progress, nullptr);
      } catch (const nmt::RowInterrupted& e) {
        fmt::print(stderr, "{}\n", e.what());
        return 130;
      }
      return 0;
    }
    throw Error(fmt::format("suite {} has no row {}", suite.name, only_row));
  }
  if (options.jobs > 1) options.program = self_path();
  fmt::print(stderr, "suite {}: {} row(s) in {}\n", suite.name, suite.rows.size(), suite.run_dir);
  const nmt::SuiteRunSummary s = nmt::run_suite(suite, registry, options);
  fmt::print("suite {}: {} trained, {} already finished, {} failed{}\nreport: attnlab report {}\n", suite.name, s.done,
             s.skipped, s.failed, s.interrupted ? "; interrupted (run again to resume)" : "", suite.run_dir);
  if (s.interrupted) return 130;
  return s.failed > 0 ? 4 : 0;
}

}  // namespace attnlab::app
