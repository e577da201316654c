// attnlab data shapes EXPERIMENT.toml: how many distinct batch shapes [B, S, T] an epoch of the
// experiment's training data has, and how much of the batches is padding, without and with static
// shapes (training.pad_to_multiple) at a few multiples: what choosing the multiple trades.
#include <algorithm>
#include <memory>
#include <vector>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/data/batching.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/train/trainer.h"

namespace attnlab::app {

int data_shapes(const std::string& file, std::vector<std::int64_t> multiples);

Command data_shapes_command(CLI::App& data) {
  struct Flags {
    std::string file;
    std::vector<std::int64_t> multiples;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* app = data.add_subcommand(
      "shapes", "the distinct batch shapes of an epoch and its padding, without and with training.pad_to_multiple");
  app->add_option("EXPERIMENT", f->file, "the experiment's TOML file")->required();
  app->add_option("--multiple", f->multiples, "the multiples to compare (default: 8 16 32 64 and the experiment's)")
      ->check(whole_number(1))
      ->type_name("M");
  return {app, [f] { return data_shapes(f->file, f->multiples); }};
}

int data_shapes(const std::string& file, std::vector<std::int64_t> multiples) {
  const nmt::ExperimentConfig config = nmt::load_experiment(file);
  const nmt::PreparedData data =
      nmt::prepare_data(config, [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
  // The trainer's batching (its budget), at each multiple in turn.
  const nmt::BatchingOptions batching = nmt::training_batching(config);
  const std::int64_t configured = batching.pad_to_multiple;
  if (multiples.empty()) multiples = {8, 16, 32, 64};
  if (configured > 0) multiples.push_back(configured);
  multiples.push_back(0);
  std::sort(multiples.begin(), multiples.end());
  multiples.erase(std::unique(multiples.begin(), multiples.end()), multiples.end());

  fmt::print("{}: {} training pairs, batches of <= {} tokens per side\n", config.name, data.train->size(),
             batching.max_tokens);
  fmt::print("{:>15}  {:>8}  {:>7}  {:>12}  {:>12}\n", "pad_to_multiple", "batches", "shapes", "real tokens",
             "padded share");
  for (const std::int64_t m : multiples) {
    const nmt::ShapeSummary s = nmt::summarize_shapes(nmt::make_batches(*data.train, batching.max_tokens, m));
    fmt::print("{:>15}  {:>8}  {:>7}  {:>12}  {:>11.1f}%{}\n", m == 0 ? std::string("0 (off)") : std::to_string(m),
               s.batches, s.shapes, s.real_tokens, 100.0 * (1.0 - s.real_share()),
               m == configured ? "  <- the experiment's" : "");
  }
  return 0;
}

}  // namespace attnlab::app
