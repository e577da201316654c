// attnlab average RUN_DIR --last N [--out FILE]: averages a run's last N checkpoints.
#include <filesystem>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/checkpoint/average.h"

namespace attnlab::app {

int command_average(const Args& args) {
  constexpr const char* kUsage = "usage: attnlab average RUN_DIR [--last N] [--out FILE]";
  std::string run_dir, out;
  std::size_t last = 5;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--last" || args[i] == "--out") {
      if (i + 1 >= args.size()) throw Error(fmt::format("{} needs a value\n{}", args[i], kUsage));
      (args[i] == "--last" ? (void)(last = std::stoul(args[i + 1])) : (void)(out = args[i + 1]));
      ++i;
    } else if (run_dir.empty() && !args[i].starts_with("--")) {
      run_dir = args[i];
    } else {
      throw Error(fmt::format("unknown argument '{}'\n{}", args[i], kUsage));
    }
  }
  if (run_dir.empty()) throw Error(kUsage);
  if (out.empty()) out = nmt::average_last_path(run_dir, last).string();
  const auto files = nmt::average_last(run_dir, last, out);
  fmt::print("averaged {} checkpoints (steps {} .. {}) into {}\n", files.size(), files.front().filename().string(),
             files.back().filename().string(), out);
  return 0;
}

}  // namespace attnlab::app
