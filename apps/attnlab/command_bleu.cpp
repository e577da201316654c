// attnlab bleu: corpus BLEU (and chrF) of a hypothesis file against reference files, printed like
// sacreBLEU's text output with its signature; on request, the score's bootstrap interval and a
// paired bootstrap test against another system's hypotheses.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <istream>
#include <memory>
#include <optional>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/metrics/bootstrap.h"
#include "attnlab/nmt/metrics/chrf.h"

namespace attnlab::app {
namespace {

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

struct BleuFlags {
  nmt::BleuConfig bleu;
  std::vector<std::string> ref_paths;
  std::string hyp_path = "-";
  std::string tokenize = "13a", smooth = "exp";
  std::optional<double> smooth_value;
  bool chrf = false, score_only = false, skip_unreferenced = false;
  std::int64_t num_refs = 1;
  bool confidence = false;
  std::string paired_base;  // --paired-bs: the baseline's hypotheses
  int bootstrap_samples = 1000;
  std::uint64_t bootstrap_seed = 12345;
};

int run_bleu(BleuFlags& f);

// sacreBLEU -nr N: each line holds N references separated by tabs (exactly N fields).
std::vector<std::vector<std::string>> split_references(const std::vector<std::string>& lines, std::size_t n,
                                                       const std::string& path) {
  std::vector<std::vector<std::string>> streams(n);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::size_t start = 0;
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t tab = r + 1 < n ? lines[i].find('\t', start) : std::string::npos;
      if (r + 1 < n && tab == std::string::npos)
        throw Error(fmt::format("{}:{}: expected {} tab-separated references, found {}", path, i + 1, n, r + 1));
      streams[r].push_back(lines[i].substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      start = tab + 1;
    }
  }
  return streams;
}

// Empty after sacreBLEU's rstrip().
bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n\f\v") == std::string::npos; }

// --skip-unreferenced: removes the segments whose every reference is blank, from the hypotheses,
// the references and the --paired-bs baseline (empty when there is none); returns how many.
std::size_t drop_unreferenced(std::vector<std::string>& hyps, std::vector<std::vector<std::string>>& refs,
                              std::vector<std::string>& base) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < hyps.size(); ++i) {
    const bool referenced = std::any_of(refs.begin(), refs.end(), [&](const auto& stream) { return !blank(stream[i]); });
    if (!referenced) continue;
    if (kept != i) {
      hyps[kept] = std::move(hyps[i]);
      for (auto& stream : refs) stream[kept] = std::move(stream[i]);
      if (!base.empty()) base[kept] = std::move(base[i]);
    }
    ++kept;
  }
  const std::size_t dropped = hyps.size() - kept;
  hyps.resize(kept);
  for (auto& stream : refs) stream.resize(kept);
  if (!base.empty()) base.resize(kept);
  return dropped;
}

}  // namespace

Command bleu_command(CLI::App& root) {
  auto f = std::make_shared<BleuFlags>();
  CLI::App* app = root.add_subcommand(
      "bleu", "corpus BLEU of HYP against one or more reference files as sacreBLEU 2.6.0 computes it, with its "
              "signature (an empty reference line is an empty reference, as in sacreBLEU)");
  repeated(app->add_option("--ref,-r", f->ref_paths, "a reference file, one segment per line (repeatable)"))
      ->required()
      ->type_name("REF");
  app->add_option("--num-refs,-n", f->num_refs,
                  "references per line of one --ref file, tab-separated (sacreBLEU's -nr); an empty field is an "
                  "empty reference")
      ->check(whole_number(1, 1000))
      ->type_name("N");
  app->add_flag("--skip-unreferenced", f->skip_unreferenced,
                "leave out segments whose every reference is empty (sacreBLEU scores them against the empty "
                "reference; this changes the score)");
  app->add_option("HYP", f->hyp_path, "the hypotheses (default, or -: standard input)");
  app->add_option("--tokenize", f->tokenize, "sacreBLEU's tokenizer")->check(choice(nmt::kBleuTokenizers));
  app->add_flag("--lowercase", f->bleu.lowercase, "case-insensitive");
  app->add_option("--smooth", f->smooth, "smoothing")->check(choice(nmt::kBleuSmooths));
  app->add_option("--smooth-value", f->smooth_value, "the floor or add-k value")->check(real_number(0.0))->type_name("X");
  app->add_flag("--effective-order", f->bleu.effective_order, "sentence-BLEU's effective order");
  app->add_option("--max-ngram-order", f->bleu.max_ngram_order, "longest n-gram")->check(whole_number(1, 100))->type_name("N");
  app->add_flag("--compound-split", f->bleu.compound_split, "paper-style WMT14 tokenized BLEU (splits ##AT##-##AT##)");
  app->add_flag("--chrf", f->chrf, "also chrF2");
  app->add_flag("--score-only,-b", f->score_only, "print the score alone");
  app->add_flag("--confidence", f->confidence,
                "also the score's spread over bootstrap resamples of the segments: mean, standard deviation and "
                "95 % interval");
  app->add_option("--paired-bs", f->paired_base,
                  "a baseline system's hypotheses for the same segments: paired bootstrap test of HYP against it "
                  "(Koehn 2004)")
      ->type_name("BASE");
  app->add_option("--bootstrap-samples", f->bootstrap_samples, "bootstrap resamples")
      ->check(whole_number(1, 1000000))
      ->type_name("N");
  app->add_option("--bootstrap-seed", f->bootstrap_seed, "the resampling seed")->check(whole_number(0))->type_name("S");
  return {app, [f] { return run_bleu(*f); }};
}

// sacreBLEU's short spellings (-tok 13a, -lc) become the long options before parsing.
std::vector<std::string> sacrebleu_spellings(std::vector<std::string> args) {
  for (auto& a : args) {
    if (a == "-tok") a = "--tokenize";
    else if (a == "-lc") a = "--lowercase";
  }
  return args;
}

namespace {

// --confidence and --paired-bs: one line each, after the scores.
void print_bootstrap(const BleuFlags& f, const std::vector<std::string>& hyps, const std::vector<std::string>& base,
                     const std::vector<std::vector<std::string>>& refs) {
  const std::vector<nmt::BleuStats> stats = nmt::segment_bleu_stats(hyps, refs, f.bleu);
  if (f.confidence) {
    const nmt::BootstrapInterval ci = nmt::bootstrap_interval(stats, f.bleu, f.bootstrap_samples, f.bootstrap_seed);
    fmt::print("bootstrap, {} resamples of the {} segments (seed {}): mean {:.2f}, standard deviation {:.2f}, "
               "95 % interval {:.2f} .. {:.2f}\n",
               ci.samples, stats.size(), f.bootstrap_seed, ci.mean, ci.stddev, ci.lower, ci.upper);
  }
  if (!f.paired_base.empty()) {
    const nmt::BootstrapResult p = nmt::paired_bootstrap(nmt::segment_bleu_stats(base, refs, f.bleu), stats, f.bleu,
                                                         f.bootstrap_samples, f.bootstrap_seed);
    fmt::print("paired bootstrap against {}, {} resamples (seed {}): {:.2f} against {:.2f} ({:+.2f}); not higher "
               "in {:.1f} % of the resamples, not lower in {:.1f} %\n",
               f.paired_base, p.samples, f.bootstrap_seed, p.system_bleu, p.base_bleu, p.system_bleu - p.base_bleu,
               100.0 * p.p_value, 100.0 * p.p_worse);
  }
}

int run_bleu(BleuFlags& f) {
  nmt::BleuConfig& bleu = f.bleu;
  bleu.tokenize = nmt::parse_bleu_tokenizer(f.tokenize);
  bleu.smooth = nmt::parse_bleu_smooth(f.smooth);
  bleu.smooth_value = f.smooth_value;
  bleu.validate();
  const std::vector<std::string>& ref_paths = f.ref_paths;
  const std::string hyp_name = f.hyp_path == "-" ? std::string("stdin") : f.hyp_path;
  const bool chrf = f.chrf, score_only = f.score_only;

  std::vector<std::vector<std::string>> refs;
  std::vector<std::string> ref_names;  // of each stream, for messages
  if (f.num_refs > 1) {
    if (ref_paths.size() != 1)
      throw Error(fmt::format("--num-refs {} splits one --ref file at tabs; {} were given", f.num_refs, ref_paths.size()));
    refs = split_references(read_file_lines(ref_paths[0]), static_cast<std::size_t>(f.num_refs), ref_paths[0]);
    for (std::size_t r = 0; r < refs.size(); ++r) ref_names.push_back(fmt::format("{} (field {})", ref_paths[0], r + 1));
  } else {
    for (const std::string& p : ref_paths) refs.push_back(read_file_lines(p));
    ref_names = ref_paths;
  }
  std::vector<std::string> hyps = f.hyp_path == "-" ? read_lines(std::cin) : read_file_lines(f.hyp_path);
  for (std::size_t r = 0; r < refs.size(); ++r) {
    if (refs[r].size() != hyps.size())
      throw Error(fmt::format("the hypothesis ({}) has {} lines but reference '{}' has {}",
                              hyp_name, hyps.size(), ref_names[r], refs[r].size()));
  }
  std::vector<std::string> base;  // --paired-bs, filtered with the hypotheses
  if (!f.paired_base.empty()) {
    base = read_file_lines(f.paired_base);
    if (base.size() != hyps.size())
      throw Error(fmt::format("the baseline ({}) has {} lines but the hypothesis ({}) has {}", f.paired_base,
                              base.size(), hyp_name, hyps.size()));
  }
  if (f.skip_unreferenced) {
    const std::size_t skipped = drop_unreferenced(hyps, refs, base);
    fmt::print(stderr, "left out {} of {} segment(s) whose every reference is empty (--skip-unreferenced)\n", skipped,
               hyps.size() + skipped);
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
  if (f.confidence || !f.paired_base.empty()) print_bootstrap(f, hyps, base, refs);
  return 0;
}

}  // namespace
}  // namespace attnlab::app
