// attnlab status SUITE_OR_RUN_DIR: where every row stands (done, running with step, ETA and the
// last dev perplexity, queued, failed with its log's last lines, stopped, not started).
#include <memory>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/nmt/cluster/status.h"

namespace attnlab::app {

Command status_command(CLI::App& root) {
  auto path = std::make_shared<std::string>();
  CLI::App* app = root.add_subcommand(
      "status", "every row's state: done, running (step, ETA, last dev ppl), queued, failed (with its log's last "
                "lines), stopped, not started; reads Slurm's queue. Exit 4 when a row failed");
  app->add_option("SUITE_OR_RUN_DIR", *path, "a suite's TOML file, its run folder, or one run folder")->required();
  return {app, [path] {
            const nmt::StatusReport report = nmt::read_status(*path);
            fmt::print("{}", nmt::format_status(report));
            for (const auto& row : report.rows)
              if (row.phase == nmt::RowPhase::kFailed) return 4;
            return 0;
          }};
}

}  // namespace attnlab::app
