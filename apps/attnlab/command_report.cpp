// attnlab report: the table (and learning curves) of suite run folders written by `attnlab run`
// and of `attnlab train` runs, one or several in one table.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/nmt/io/atomic_file.h"
#include "attnlab/nmt/report/report.h"

namespace attnlab::app {

int run_report(const std::vector<std::string>& sources, const std::string& output, nmt::ReportFormat format,
               const nmt::ReportOptions& options);

Command report_command(CLI::App& root) {
  struct Flags {
    std::vector<std::string> sources;
    std::string output, format = "terminal";
    nmt::ReportOptions options;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "report", "the table of one or more runs: settings, parameters, steps, time, dev perplexity, BLEU (mean and std "
                "over seeds), changes and a paired bootstrap test against the base row, the paper's values; html adds "
                "learning curves. Several folders give one table, each row named SOURCE/ROW (SOURCE: the folder's "
                "name), compared with one base row; the bootstrap pairs rows scored on the same dev sentences");
  app->add_option("RUN_DIR", f->sources,
                  "a suite's run folder (suite.json and one folder per row and seed) or an `attnlab train` run folder "
                  "(config.toml); several: one table")
      ->required()
      ->expected(1, -1);
  app->add_option("--base", f->options.base,
                  "the base row the changes and tests are against (ROW, or SOURCE/ROW with several folders; default: "
                  "the first row named base, else the first row)")
      ->type_name("ROW");
  app->add_option("--format,-f", f->format, "output format")
      ->check(choice(nmt::kReportFormats, nmt::report_format_aliases()));
  app->add_option("--output,-o", f->output, "write to FILE (default: standard output)")->type_name("FILE");
  app->add_option("--ref", f->options.dev_reference, "the dev references for the bootstrap test")->type_name("FILE");
  app->add_option("--bootstrap-samples", f->options.bootstrap_samples, "paired bootstrap resamples")
      ->check(whole_number(1, 1000000))
      ->type_name("N");
  app->add_option("--bootstrap-seed", f->options.bootstrap_seed, "the resampling seed")
      ->check(whole_number(0))
      ->type_name("S");
  return {app, [f] { return run_report(f->sources, f->output, nmt::parse_report_format(f->format), f->options); }};
}

int run_report(const std::vector<std::string>& sources, const std::string& output, nmt::ReportFormat format,
               const nmt::ReportOptions& options) {
  const nmt::Report report = nmt::build_report(sources, options);
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
