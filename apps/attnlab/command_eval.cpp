// attnlab eval RUN_OR_CHECKPOINT...: perplexity and BLEU of a trained model on its dev or test set,
// with the evaluation settings of the run's experiment (RUN/eval.toml, the [eval] table kept by
// attnlab train: BLEU mode, beam, alpha, checkpoint averaging); flags override them. Several paths
// are evaluated as one ensemble (their log-probabilities averaged at every step), with the first
// run's settings and data, recorded in the first run folder as set "<set>-ensemble". Several
// values of --beam, --alpha or --average (comma-separated) decode the set once per combination:
// a table of BLEU and length per decoding, its best row named, kept as RUN/eval/<set>-decoding.tsv
// (the run's records are left as they are).
#include <filesystem>
#include <memory>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/nmt/checkpoint/average.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/eval/eval_record.h"
#include "attnlab/nmt/decode/ensemble.h"
#include "attnlab/nmt/eval/evaluation.h"
#include "attnlab/nmt/data/prepared_data.h"

namespace attnlab::app {

namespace fs = std::filesystem;

namespace {

struct EvalFlags {
  std::vector<std::string> paths;
  std::string source, target, hyp_out, device = "cpu";
  bool test = false, lowercase = false;
  std::vector<std::int64_t> beams, averages;
  std::vector<double> alphas;
  std::optional<std::int64_t> max_length_offset;
  std::optional<std::int64_t> until;
  std::optional<std::string> bleu;
};

int run_eval(const EvalFlags& f);

}  // namespace

Command eval_command(CLI::App& root) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* app = root.add_subcommand(
      "eval", "perplexity per wordpiece (with and without label smoothing) and BLEU of a run, with the run's [eval] "
              "settings (flags override them); recorded in the run folder for attnlab report");
  app->add_option("RUN_OR_CHECKPOINT", f->paths,
                  "a run folder or one checkpoint file; several are evaluated as an ensemble")
      ->required();
  app->add_flag("--test", f->test, "the run's test set instead of its dev set");
  auto* source = app->add_option("--source", f->source, "another source file")->type_name("FILE");
  auto* target = app->add_option("--target", f->target, "its reference translations")->type_name("FILE");
  source->needs(target);
  target->needs(source);
  // Each takes a comma-separated list for a decoding grid.
  const nmt::EvalConfig d;
  app->add_option("--beam", f->beams,
                  fmt::format("beam size; several, comma-separated, decode once each (default: the run's eval.beam, "
                              "{} unless set)",
                              d.beam))
      ->delimiter(',')
      ->check(whole_number(1, 1000))
      ->type_name("N");
  app->add_option("--alpha", f->alphas,
                  fmt::format("length penalty ((5 + length) / 6)^alpha; several, comma-separated, decode once each "
                              "(default: the run's eval.alpha, {} unless set)",
                              d.alpha))
      ->delimiter(',')
      ->check(real_number(0.0))
      ->type_name("A");
  add_max_length_offset_option(*app, f->max_length_offset);
  app->add_option("--bleu", f->bleu, fmt::format("BLEU mode (default: the run's eval.bleu, {} unless set)",
                                                 nmt::EvalConfig{}.bleu))
      ->check(choice(nmt::kBleuModes));
  app->add_flag("--lowercase", f->lowercase, "case-insensitive BLEU");
  app->add_option("--average", f->averages,
                  fmt::format("average the run's last N checkpoints first (0: none; several, comma-separated, "
                              "decode once each; default: the run's eval.average_last, {} unless set)",
                              d.average_last))
      ->delimiter(',')
      ->check(whole_number(0))
      ->type_name("N");
  app->add_option("--until", f->until,
                  "only the run's checkpoints up to this step: what a run of that many steps would have evaluated "
                  "(with averaging, the last N of those; without, the newest of them)")
      ->check(whole_number(1))
      ->type_name("STEP");
  app->add_option("--hypotheses", f->hyp_out, "also write the translations to FILE")->type_name("FILE");
  add_device_option(*app, f->device);
  return {app, [f] { return run_eval(*f); }};
}

namespace {

// The members' checkpoints: each run folder's last `average` checkpoints averaged (up to step
// `until` when it is > 0), or its newest one; a checkpoint file as it is.
std::vector<std::string> member_checkpoints(const std::vector<std::string>& paths, std::int64_t average,
                                            std::int64_t until) {
  std::vector<std::string> checkpoints;
  for (const std::string& p : paths) {
    std::string checkpoint = p;
    if (fs::is_directory(p) && average > 1) {
      const auto n = static_cast<std::size_t>(average);
      checkpoint = nmt::average_last_path(p, n, until).string();
      const auto files = nmt::average_last(p, n, checkpoint, until);
      fmt::print("averaged the last {} checkpoints of {} ({} .. {})\n", files.size(), p,
                 files.front().filename().string(), files.back().filename().string());
    } else if (fs::is_directory(p) && until > 0) {
      checkpoint = nmt::last_checkpoints(p, 1, until).front().string();
    } else if (until > 0) {
      throw Error(fmt::format("eval: --until selects among a run's checkpoints; {} is one checkpoint file", p));
    }
    checkpoints.push_back(checkpoint);
  }
  return checkpoints;
}

std::vector<nmt::LoadedModel> load_members(const std::vector<std::string>& checkpoints, const Registry& registry,
                                           const Device& device) {
  std::vector<nmt::LoadedModel> members = nmt::load_ensemble(checkpoints, registry, device);
  for (const auto& m : members)
    for (const auto& w : m.warnings) fmt::print(stderr, "warning: {}\n", w);
  return members;
}

// The set to evaluate: the given files, or the run's own dev (or test) set.
void resolve_set(const nmt::ExperimentConfig& c, bool test, std::string& source, std::string& target) {
  if (!source.empty()) return;
  if (c.data.synthetic) {
    const std::string dir = nmt::synthetic_corpus_dir(c);
    source = dir + (test ? "/test.src" : "/dev.src");
    target = dir + (test ? "/test.tgt" : "/dev.tgt");
  } else {
    source = test ? c.data.test_source : c.data.dev_source;
    target = test ? c.data.test_target : c.data.dev_target;
  }
  if (source.empty()) throw Error(fmt::format("the run has no {} set; give --source and --target", test ? "test" : "dev"));
}

// Every combination of the averaging windows, beams and alphas, decoded and scored: one line each
// as it ends, the best BLEU named (ties: the earlier line), the table kept as RUN/eval/<set>-decoding.tsv.
int run_grid(const EvalFlags& f, const nmt::EvalConfig& eval, const fs::path& run_dir, const std::string& set_name,
             const Device& device) {
  if (!f.hyp_out.empty())
    throw Error("eval: --hypotheses writes one decoding's translations; give one value of --beam, --alpha and --average");
  const std::vector<std::int64_t> averages = f.averages.empty() ? std::vector{eval.average_last} : f.averages;
  const std::vector<std::int64_t> beams = f.beams.empty() ? std::vector{eval.beam} : f.beams;
  const std::vector<double> alphas = f.alphas.empty() ? std::vector{eval.alpha} : f.alphas;
  const std::int64_t until = f.until.value_or(0);
  fmt::print("decoding grid: {} averaging window(s) x {} beam(s) x {} alpha(s) = {} decodings (the run's own: "
             "average {}, beam {}, alpha {})\n",
             averages.size(), beams.size(), alphas.size(), averages.size() * beams.size() * alphas.size(),
             eval.average_last, eval.beam, eval.alpha);
  std::vector<std::string> lines{"average\tbeam\talpha\tbleu\tbrevity_penalty\tlength_ratio\tppl\tdecode_seconds"};
  std::string source = f.source, target = f.target, best;
  double best_bleu = -1.0;
  bool header = false;
  const Registry& registry = load_plugins();  // once: a second load would register every plugin twice
  for (const std::int64_t average : averages) {
    std::vector<nmt::LoadedModel> members = load_members(member_checkpoints(f.paths, average, until), registry, device);
    resolve_set(members.front().config, f.test, source, target);
    if (!header) {
      fmt::print("set: {} -> {}\n{:>7}  {:>4}  {:>5}  {:>6}  {:>5}  {:>6}  {:>7}  {:>7}\n", source, target, "average",
                 "beam", "alpha", "BLEU", "BP", "ratio", "PPL", "seconds");
      header = true;
    }
    // The set is read and scored for perplexity once per window, then decoded once per beam and alpha.
    std::vector<nmt::BeamOptions> decodings;
    for (const std::int64_t beam : beams)
      for (const double alpha : alphas) {
        nmt::BeamOptions& d = decodings.emplace_back(nmt::beam_options_for(eval));
        d.beam = beam;
        d.alpha = alpha;
      }
    // Each line is printed as its decoding ends.
    nmt::evaluate_decodings(members, source, target, eval, decodings, [&](std::size_t i, const nmt::Evaluation& e) {
      const std::int64_t beam = decodings[i].beam;
      const double alpha = decodings[i].alpha;
      fmt::print("{:>7}  {:>4}  {:>5}  {:>6.2f}  {:>5.3f}  {:>6.3f}  {:>7.3f}  {:>7.1f}\n", average, beam, alpha,
                 e.bleu.score, e.bleu.bp, e.bleu.ratio(), e.scores.perplexity(), e.decode_seconds);
      std::fflush(stdout);
      lines.push_back(fmt::format("{}\t{}\t{}\t{:.4f}\t{:.4f}\t{:.4f}\t{:.4f}\t{:.2f}", average, beam, alpha,
                                  e.bleu.score, e.bleu.bp, e.bleu.ratio(), e.scores.perplexity(), e.decode_seconds));
      if (e.bleu.score > best_bleu) {
        best_bleu = e.bleu.score;
        best = fmt::format("average {}, beam {}, alpha {}: {} BLEU {:.2f}", average, beam, alpha, e.bleu_mode,
                           e.bleu.score);
      }
    });
  }
  const fs::path table = run_dir / "eval" / (set_name + "-decoding.tsv");
  fs::create_directories(table.parent_path());
  nmt::write_lines(table.string(), lines);
  fmt::print("best: {}\nkept in {} (the run's evaluation records are unchanged)\n", best, table.string());
  return 0;
}

int run_eval(const EvalFlags& f) {
  std::string source = f.source, target = f.target;
  const std::string& path = f.paths.front();
  const bool test = f.test;
  const std::string& hyp_out = f.hyp_out;
  const Device target_device = Device::parse(f.device);
  check_device_available(target_device);  // before reading the model
  // The run's evaluation settings, then the flags.
  const bool is_run = fs::is_directory(path);
  const fs::path run_dir = is_run ? fs::path(path) : fs::path(path).parent_path().parent_path();
  const std::optional<nmt::EvalConfig> kept = nmt::read_run_eval(run_dir.string());
  nmt::EvalConfig eval = kept.value_or(nmt::EvalConfig{});
  if (f.max_length_offset) eval.max_length_offset = *f.max_length_offset;
  if (f.bleu) eval.bleu = *f.bleu;
  if (f.lowercase) eval.lowercase = true;
  if (!kept)
    fmt::print(stderr, "note: {} has no {} (trained by an older attnlab): default evaluation settings\n",
               run_dir.string(), nmt::kRunEvalFile);
  const bool ensemble = f.paths.size() > 1;
  const std::string set_name = (source.empty() ? (test ? "test" : "dev") : fs::path(source).stem().string()) +
                               (ensemble ? "-ensemble" : "");
  if (f.beams.size() > 1 || f.alphas.size() > 1 || f.averages.size() > 1)
    return run_grid(f, eval, run_dir, set_name, target_device);
  if (!f.beams.empty()) eval.beam = f.beams.front();
  if (!f.alphas.empty()) eval.alpha = f.alphas.front();
  if (!f.averages.empty()) eval.average_last = f.averages.front();
  std::vector<nmt::LoadedModel> members =
      load_members(member_checkpoints(f.paths, eval.average_last, f.until.value_or(0)), load_plugins(), target_device);
  const nmt::LoadedModel& model = members.front();
  resolve_set(model.config, test, source, target);
  const nmt::Evaluation e = nmt::evaluate_model(members, source, target, eval);
  for (const auto& m : members) fmt::print("model: {} (step {})\n", m.checkpoint, m.step);
  if (ensemble) fmt::print("ensemble of {} models\n", members.size());
  fmt::print("set: {} -> {}\n", source, target);
  fmt::print("perplexity per wordpiece: {:.3f} (no label smoothing); {:.3f} with label smoothing {}; {} pieces\n",
             e.scores.perplexity(), e.scores.smoothed_perplexity(), e.label_smoothing, e.scores.tokens);
  fmt::print("{}\n", e.bleu.format(e.bleu_signature));
  if (e.bleu_mode != "sacrebleu") fmt::print("{}  (sacreBLEU default, for comparison)\n", e.sacrebleu.format(e.sacrebleu_signature));
  fmt::print("bleu mode: {}; beam {}, alpha {}; decoding {:.1f} s ({:.1f} sentences/s, {:.0f} target tokens/s)\n",
             e.bleu_mode, eval.beam, eval.alpha, e.decode_seconds,
             static_cast<double>(e.hypotheses.size()) / std::max(e.decode_seconds, 1e-9),
             static_cast<double>(e.generated_tokens) / std::max(e.decode_seconds, 1e-9));
  if (!hyp_out.empty()) nmt::write_lines(hyp_out, e.hypotheses);
  // Kept in the run folder for attnlab report (eval_record.h).
  nmt::EvalRecord record{.set = set_name,
                         .source = source,
                         .reference = target,
                         .checkpoint = model.checkpoint,
                         .step = model.step,
                         .averaged = is_run && eval.average_last > 1 ? eval.average_last : 0,
                         .ppl = e.scores.perplexity(),
                         .ppl_smoothed = e.scores.smoothed_perplexity(),
                         .tokens = e.scores.tokens,
                         .bleu = e.bleu.score,
                         .bleu_mode = e.bleu_mode,
                         .bleu_signature = e.bleu_signature,
                         .sacrebleu = e.sacrebleu.score,
                         .sacrebleu_signature = e.sacrebleu_signature,
                         .beam = eval.beam,
                         .alpha = eval.alpha,
                         .decode_seconds = e.decode_seconds};
  if (ensemble)
    for (const auto& m : members) record.ensemble.push_back(m.checkpoint);
  std::string hypotheses;
  for (const auto& h : e.hypotheses) hypotheses += h + "\n";
  fmt::print("recorded in {}\n", nmt::write_eval_record(run_dir.string(), record, hypotheses));
  return 0;
}

}  // namespace
}  // namespace attnlab::app
