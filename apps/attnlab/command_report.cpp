// attnlab report: the table (and learning curves) of a suite run folder written by `attnlab run`.
#include <cstddef>
#include <span>
#include <string>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/nmt/io/atomic_file.h"
#include "attnlab/nmt/report/report.h"

namespace attnlab::app {
namespace {

constexpr const char* kReportUsage =
    "usage: attnlab report RUN_DIR [--format terminal|markdown|csv|latex|html] [--output FILE]\n"
    "                      [--ref DEV_REFERENCE] [--bootstrap-samples N] [--bootstrap-seed S]\n"
    "  RUN_DIR holds suite.json and one folder per row and seed (written by attnlab run)";

}  // namespace

int command_report(const Args& args) {
  std::string run_dir, output;
  nmt::ReportFormat format = nmt::ReportFormat::kTerminal;
  nmt::ReportOptions options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error(fmt::format("{} needs a value\n{}", a, kReportUsage));
      return args[++i];
    };
    if (a == "--format" || a == "-f") format = nmt::parse_report_format(value());
    else if (a == "--output" || a == "-o") output = value();
    else if (a == "--ref") options.dev_reference = value();
    else if (a == "--bootstrap-samples") options.bootstrap_samples = std::stoi(value());
    else if (a == "--bootstrap-seed") options.bootstrap_seed = std::stoull(value());
    else if (a == "--help" || a == "-h") {
      fmt::print("{}\n", kReportUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') throw Error(fmt::format("unknown option '{}'\n{}", a, kReportUsage));
    else if (!run_dir.empty()) throw Error(fmt::format("more than one run folder ('{}', '{}')\n{}", run_dir, a, kReportUsage));
    else run_dir = a;
  }
  if (run_dir.empty()) throw Error(fmt::format("a run folder is required\n{}", kReportUsage));
  if (options.bootstrap_samples < 1) throw Error("--bootstrap-samples must be at least 1");

  const nmt::Report report = nmt::build_report(run_dir, options);
  const std::string text = nmt::render_report(report, format);
  if (output.empty() || output == "-") {
    fmt::print("{}", text);
  } else {
    nmt::write_file_atomically(output, std::as_bytes(std::span<const char>(text.data(), text.size())));
    fmt::print(stderr, "wrote {}\n", output);
  }
  return 0;
}

}  // namespace attnlab::app
