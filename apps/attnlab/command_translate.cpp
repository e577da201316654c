// attnlab translate / attnlab score: inference with a trained model, or an ensemble of several
// (--checkpoint given more than once: their log-probabilities averaged at every step).
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/decode/ensemble.h"

namespace attnlab::app {
namespace {

struct InferenceArgs {
  std::vector<std::string> checkpoints;
  std::string input = "-", output = "-", source, target, device = "cpu";
  BeamFlags beam;
  std::int64_t batch_tokens = 4096;
  std::vector<std::string> plugin_paths;
};

// The options translate and score share.
void add_model_options(CLI::App& app, InferenceArgs& a) {
  app.add_option("--checkpoint", a.checkpoints,
                 "a run folder (its newest checkpoint) or one checkpoint file; several (repeat the flag) decode and "
                 "score as an ensemble, averaging their log-probabilities at every step")
      ->required()
      ->type_name("RUN_OR_FILE");
  app.add_option("--output", a.output, "where the output goes (- : standard output)")->type_name("FILE");
  add_device_option(app, a.device);
  add_plugin_path_option(app, a.plugin_paths);
}

std::vector<nmt::LoadedModel> load(const InferenceArgs& a) {
  const Device device = Device::parse(a.device);
  check_device_available(device);  // before reading the model
  std::vector<nmt::LoadedModel> members = nmt::load_ensemble(a.checkpoints, load_plugins(a.plugin_paths), device);
  for (const auto& m : members) {
    for (const auto& w : m.warnings) fmt::print(stderr, "warning: {}\n", w);
    fmt::print(stderr, "model: {} (step {})\n", m.checkpoint, m.step);
  }
  if (members.size() > 1) fmt::print(stderr, "ensemble of {} models\n", members.size());
  return members;
}

void write_lines_to(const std::string& path, const std::vector<std::string>& lines) {
  if (path == "-") {
    for (const auto& l : lines) std::cout << l << '\n';
    std::cout.flush();
    return;
  }
  nmt::write_lines(path, lines);
}

}  // namespace

std::vector<std::string> read_text_lines(const std::string& path) {
  if (path != "-") return nmt::read_lines(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(std::cin, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

Command translate_command(CLI::App& root) {
  auto a = std::make_shared<InferenceArgs>();
  CLI::App* app = root.add_subcommand("translate", "translate text (standard input to standard output by default) with beam search");
  add_model_options(*app, *a);
  app->add_option("--input", a->input, "the source sentences, one per line (- : standard input)")->type_name("FILE");
  add_beam_options(*app, a->beam);
  app->add_option("--batch-tokens", a->batch_tokens, "source tokens per decoding batch")
      ->check(whole_number(1))
      ->type_name("N");
  return {app, [a] {
            nmt::BeamOptions beam;
            if (a->beam.beam) beam.beam = *a->beam.beam;
            if (a->beam.alpha) beam.alpha = *a->beam.alpha;
            if (a->beam.max_length_offset) beam.max_length_offset = *a->beam.max_length_offset;
            std::vector<nmt::LoadedModel> members = load(*a);
            write_lines_to(a->output, nmt::translate(members, read_text_lines(a->input), beam, a->batch_tokens));
            return 0;
          }};
}

Command score_command(CLI::App& root) {
  auto a = std::make_shared<InferenceArgs>();
  CLI::App* app = root.add_subcommand("score", "per-sentence log-probabilities (and token counts) of given translations");
  add_model_options(*app, *a);
  app->add_option("--source", a->source, "source sentences")->required()->type_name("FILE");
  app->add_option("--target", a->target, "their translations")->required()->type_name("FILE");
  return {app, [a] {
            std::vector<nmt::LoadedModel> members = load(*a);
            const auto corpus = nmt::read_parallel(a->source, a->target);
            std::vector<std::string> out;
            for (const auto& s : nmt::score_pairs(members, corpus.src, corpus.tgt))
              out.push_back(fmt::format("{:.6f}\t{}", s.log_prob, s.tokens));
            write_lines_to(a->output, out);
            return 0;
          }};
}

}  // namespace attnlab::app
