// attnlab train EXPERIMENT.toml: trains one configuration into its run folder, resuming when the
// folder already holds checkpoints of the same configuration.
#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/dist/communicator.h"
#include "attnlab/nmt/train/trainer.h"

namespace attnlab::app {

int command_train(const Args& args) {
  std::string file;
  std::optional<std::int64_t> steps;
  std::string run_dir, device;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error(fmt::format("{} needs a value", a));
      return args[++i];
    };
    if (a == "--steps") steps = std::stoll(value());
    else if (a == "--run-dir") run_dir = value();
    else if (a == "--device") device = value();
    else if (!a.starts_with("--") && file.empty()) file = a;
    else throw Error(fmt::format("unknown argument '{}' (usage: attnlab train EXPERIMENT.toml [--steps N] "
                                 "[--run-dir DIR] [--device cpu|cuda:N])", a));
  }
  if (file.empty()) throw Error("usage: attnlab train EXPERIMENT.toml [--steps N] [--run-dir DIR] [--device D]");
  nmt::ExperimentConfig config = nmt::load_experiment(file);
  if (steps) config.training.max_steps = *steps;
  if (!run_dir.empty()) config.run_dir = run_dir;
  if (!device.empty()) config.device = Device::parse(device).str();
  // Before plugins and data: a missing GPU is reported at once.
  check_device_available(Device::parse(config.device));

  const Registry& registry = load_plugins(config.plugin_paths);

  nmt::install_stop_signal_handlers();
  const bool root = nmt::detect_launch().rank == 0;  // rank 0 of a data-parallel job reports
  if (root) fmt::print(stderr, "training {} into {}\n", config.name, config.run_dir);
  nmt::TrainResult r;
  try {
    r = nmt::train(config, registry);
  } catch (const std::exception& e) {
    // One rank of a data-parallel job failed: say why, then end the others too.
    fmt::print(stderr, "attnlab train: error: {}\n", e.what());
    nmt::abort_parallel_job(1);
    return 1;
  }
  if (!root) return r.interrupted ? 130 : 0;
  fmt::print("{}: {} steps in {:.1f} s ({:.0f} target tokens/s), train loss {:.4f}", config.name, r.steps, r.seconds,
             r.tokens_per_second, r.train_loss);
  if (r.dev_ppl) fmt::print(", dev ppl {:.3f}", *r.dev_ppl);
  fmt::print("\ncheckpoint: {}\n", r.last_checkpoint);
  return r.interrupted ? 130 : 0;
}

}  // namespace attnlab::app
