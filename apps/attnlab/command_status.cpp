// attnlab status SUITE_OR_RUN_DIR: where every row stands (done, running with step, ETA and the
// last dev perplexity, queued, failed with its log's last lines, stopped, not started).
#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/nmt/cluster/status.h"

namespace attnlab::app {

int command_status(const Args& args) {
  constexpr const char* kUsage = "usage: attnlab status SUITE.toml | SUITE_RUN_DIR | RUN_DIR";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    fmt::print("{}\n", kUsage);
    return 0;
  }
  if (args.size() != 1 || args[0].starts_with("--")) throw Error(kUsage);
  const nmt::StatusReport report = nmt::read_status(args[0]);
  fmt::print("{}", nmt::format_status(report));
  for (const auto& row : report.rows)
    if (row.phase == nmt::RowPhase::kFailed) return 4;
  return 0;
}

}  // namespace attnlab::app
