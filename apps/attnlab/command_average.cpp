// attnlab average RUN_DIR [--last N] [--until STEP] [--out FILE]: averages a run's last N
// checkpoints (of those up to step STEP).
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/checkpoint/average.h"

namespace attnlab::app {

Command average_command(CLI::App& root) {
  struct Flags {
    std::string run_dir, out;
    std::int64_t last = 5;
    std::optional<std::int64_t> until;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "average", "average the last N checkpoints of a run (the paper: 5 for base, 20 for big)");
  app->add_option("RUN_DIR", f->run_dir, "the run folder")->required();
  app->add_option("--last", f->last, "how many checkpoints")->check(whole_number(1))->type_name("N");
  app->add_option("--until", f->until,
                  "only the checkpoints up to this step (what a run of that many steps would average)")
      ->check(whole_number(1))
      ->type_name("STEP");
  app->add_option("--out", f->out, "the averaged checkpoint (default: beside the run's checkpoints)")
      ->type_name("FILE");
  return {app, [f] {
            const auto last = static_cast<std::size_t>(f->last);
            const std::string out =
                f->out.empty() ? nmt::average_last_path(f->run_dir, last, f->until.value_or(0)).string() : f->out;
            const auto files = nmt::average_last(f->run_dir, last, out, f->until.value_or(0));
            fmt::print("averaged {} checkpoints (steps {} .. {}) into {}\n", files.size(),
                       files.front().filename().string(), files.back().filename().string(), out);
            return 0;
          }};
}

}  // namespace attnlab::app
