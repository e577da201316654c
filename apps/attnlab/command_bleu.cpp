// attnlab bleu: corpus BLEU (and chrF) of a hypothesis file against reference files, printed like
// sacreBLEU's text output with its signature.
#include <fstream>
#include <iostream>
#include <istream>
#include <optional>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/metrics/chrf.h"

namespace attnlab::app {
namespace {

constexpr const char* kBleuUsage =
    "usage: attnlab bleu --ref REF [--ref REF2 ...] [HYP] [--tokenize 13a|intl|char|none] [--lowercase]\n"
    "                    [--smooth exp|floor|add-k|none] [--smooth-value X] [--effective-order]\n"
    "                    [--max-ngram-order N] [--compound-split] [--chrf] [--score-only]\n"
    "  HYP defaults to standard input";

// One segment per line; the trailing "\n" of each line is dropped (as sacreBLEU reads files).
std::vector<std::string> read_lines(std::istream& in) {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> read_file_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open '{}'", path));
  return read_lines(in);
}

}  // namespace

int command_bleu(const Args& args) {
  nmt::BleuConfig bleu;
  std::vector<std::string> ref_paths;
  std::optional<std::string> hyp_path;
  bool chrf = false, score_only = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error(fmt::format("{} needs a value\n{}", a, kBleuUsage));
      return args[++i];
    };
    if (a == "--ref" || a == "-r") ref_paths.push_back(value());
    else if (a == "--tokenize" || a == "-tok") bleu.tokenize = nmt::parse_bleu_tokenizer(value());
    else if (a == "--lowercase" || a == "-lc") bleu.lowercase = true;
    else if (a == "--smooth") bleu.smooth = nmt::parse_bleu_smooth(value());
    else if (a == "--smooth-value") bleu.smooth_value = std::stod(value());
    else if (a == "--effective-order") bleu.effective_order = true;
    else if (a == "--max-ngram-order") bleu.max_ngram_order = std::stoi(value());
    else if (a == "--compound-split") bleu.compound_split = true;
    else if (a == "--chrf") chrf = true;
    else if (a == "--score-only" || a == "-b") score_only = true;
    else if (a == "--help" || a == "-h") {
      fmt::print("{}\n", kBleuUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-' && a != "-") throw Error(fmt::format("unknown option '{}'\n{}", a, kBleuUsage));
    else if (hyp_path) throw Error(fmt::format("more than one hypothesis file ('{}', '{}')\n{}", *hyp_path, a, kBleuUsage));
    else hyp_path = a;
  }
  if (ref_paths.empty()) throw Error(fmt::format("at least one --ref REF is required\n{}", kBleuUsage));
  bleu.validate();

  std::vector<std::vector<std::string>> refs;
  for (const std::string& p : ref_paths) refs.push_back(read_file_lines(p));
  const std::vector<std::string> hyps =
      (!hyp_path || *hyp_path == "-") ? read_lines(std::cin) : read_file_lines(*hyp_path);
  for (std::size_t r = 0; r < refs.size(); ++r) {
    if (refs[r].size() != hyps.size())
      throw Error(fmt::format("the hypothesis ({}) has {} lines but reference '{}' has {}",
                              hyp_path.value_or("stdin"), hyps.size(), ref_paths[r], refs[r].size()));
  }

  const nmt::BleuScore score = nmt::corpus_bleu(hyps, refs, bleu);
  if (score_only) fmt::print("{:.2f}\n", score.score);
  else fmt::print("{}\n", score.format(nmt::bleu_signature(bleu, score.num_refs)));
  if (chrf) {
    nmt::ChrfConfig config;
    config.lowercase = bleu.lowercase;
    const nmt::ChrfScore c = nmt::corpus_chrf(hyps, refs, config);
    if (score_only) fmt::print("{:.2f}\n", c.score);
    else fmt::print("{}\n", c.format(nmt::chrf_signature(config, score.num_refs)));
  }
  return 0;
}

}  // namespace attnlab::app
