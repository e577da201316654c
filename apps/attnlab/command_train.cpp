// attnlab train EXPERIMENT.toml: trains one configuration into its run folder, resuming when the
// folder already holds checkpoints of the same configuration.
#include <memory>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/dist/communicator.h"
#include "attnlab/nmt/train/trainer.h"

namespace attnlab::app {

namespace {

struct TrainFlags {
  std::string file, run_dir, device;
  std::vector<std::string> settings;  // --set KEY=VALUE
  std::optional<std::int64_t> steps;
};

int run_train(const TrainFlags& f);

}  // namespace

Command train_command(CLI::App& root) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* app = root.add_subcommand(
      "train", "train one configuration into its run folder (resumes an interrupted run); under mpirun -np N or "
               "srun -n N: data parallel over N processes");
  app->add_option("EXPERIMENT", f->file, "the experiment's TOML file")->required();
  add_set_option(*app, f->settings, "the experiment's");
  app->add_option("--steps", f->steps, "train to this many steps (over training.max_steps)")
      ->check(whole_number(1))
      ->type_name("N");
  app->add_option("--run-dir", f->run_dir, "the run folder (over the experiment's)")->type_name("DIR");
  add_device_option(*app, f->device, "the device to train on (over the experiment's)");
  return {app, [f] { return run_train(*f); }};
}

namespace {

int run_train(const TrainFlags& f) {
  const std::string& file = f.file;
  const std::optional<std::int64_t>& steps = f.steps;
  const std::string& run_dir = f.run_dir;
  const std::string& device = f.device;
  nmt::ExperimentConfig config = nmt::load_experiment(file, f.settings);
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

}  // namespace
}  // namespace attnlab::app
