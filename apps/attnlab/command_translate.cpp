// attnlab translate / attnlab score: inference with a trained model.
#include <fstream>
#include <iostream>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/decode/translator.h"

namespace attnlab::app {
namespace {

struct InferenceArgs {
  std::string checkpoint, input = "-", output = "-", source, target, device = "cpu";
  nmt::BeamOptions beam;
  std::int64_t batch_tokens = 4096;
  std::vector<std::string> plugin_paths;
};

InferenceArgs parse(const Args& args, const char* usage) {
  InferenceArgs a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& k = args[i];
    if (i + 1 >= args.size()) throw Error(fmt::format("{} needs a value\n{}", k, usage));
    const std::string& v = args[++i];
    if (k == "--checkpoint") a.checkpoint = v;
    else if (k == "--input") a.input = v;
    else if (k == "--output") a.output = v;
    else if (k == "--source") a.source = v;
    else if (k == "--target") a.target = v;
    else if (k == "--device") a.device = v;
    else if (k == "--beam") a.beam.beam = std::stoll(v);
    else if (k == "--alpha") a.beam.alpha = std::stod(v);
    else if (k == "--max-length-offset") a.beam.max_length_offset = std::stoll(v);
    else if (k == "--batch-tokens") a.batch_tokens = std::stoll(v);
    else if (k == "--plugin-path") a.plugin_paths.push_back(v);
    else throw Error(fmt::format("unknown option '{}'\n{}", k, usage));
  }
  if (a.checkpoint.empty()) throw Error(fmt::format("--checkpoint RUN_DIR_OR_FILE is required\n{}", usage));
  return a;
}

nmt::LoadedModel load(const InferenceArgs& a) {
  const Device device = Device::parse(a.device);
  check_device_available(device);  // before reading the model
  nmt::LoadedModel m = nmt::load_model(a.checkpoint, load_plugins(a.plugin_paths), device);
  for (const auto& w : m.warnings) fmt::print(stderr, "warning: {}\n", w);
  fmt::print(stderr, "model: {} (step {})\n", m.checkpoint, m.step);
  return m;
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

int command_translate(const Args& args) {
  constexpr const char* kUsage =
      "usage: attnlab translate --checkpoint RUN_DIR_OR_FILE [--input FILE|-] [--output FILE|-] [--beam 4] "
      "[--alpha 0.6] [--max-length-offset 50] [--batch-tokens 4096] [--device cpu]";
  const InferenceArgs a = parse(args, kUsage);
  nmt::LoadedModel model = load(a);
  write_lines_to(a.output, nmt::translate(model, read_text_lines(a.input), a.beam, a.batch_tokens));
  return 0;
}

int command_score(const Args& args) {
  constexpr const char* kUsage =
      "usage: attnlab score --checkpoint RUN_DIR_OR_FILE --source FILE --target FILE [--output FILE|-] [--device D]";
  const InferenceArgs a = parse(args, kUsage);
  if (a.source.empty() || a.target.empty()) throw Error(fmt::format("--source and --target are required\n{}", kUsage));
  nmt::LoadedModel model = load(a);
  const auto corpus = nmt::read_parallel(a.source, a.target);
  std::vector<std::string> out;
  for (const auto& s : nmt::score_pairs(model, corpus.src, corpus.tgt))
    out.push_back(fmt::format("{:.6f}\t{}", s.log_prob, s.tokens));
  write_lines_to(a.output, out);
  return 0;
}

}  // namespace attnlab::app
