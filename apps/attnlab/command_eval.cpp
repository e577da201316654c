// attnlab eval RUN_OR_CHECKPOINT...: perplexity and BLEU of a trained model on its dev or test set,
// with the evaluation settings of the run's experiment (RUN/eval.toml, the [eval] table kept by
// attnlab train: BLEU mode, beam, alpha, checkpoint averaging); flags override them. Several paths
// are evaluated as one ensemble (their log-probabilities averaged at every step), with the first
// run's settings and data, recorded in the first run folder as set "<set>-ensemble".
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
  BeamFlags beam;
  std::optional<std::int64_t> average;
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
  add_beam_options(*app, f->beam);
  app->add_option("--bleu", f->bleu, fmt::format("BLEU mode (default: the run's eval.bleu, {} unless set)",
                                                 nmt::EvalConfig{}.bleu))
      ->check(choice(nmt::kBleuModes));
  app->add_flag("--lowercase", f->lowercase, "case-insensitive BLEU");
  app->add_option("--average", f->average,
                  fmt::format("average the run's last N checkpoints first (0: none; default: the run's "
                              "eval.average_last, {} unless set)",
                              nmt::EvalConfig{}.average_last))
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
  const std::int64_t until = f.until.value_or(0);
  const std::optional<nmt::EvalConfig> kept = nmt::read_run_eval(run_dir.string());
  nmt::EvalConfig eval = kept.value_or(nmt::EvalConfig{});
  if (f.beam.beam) eval.beam = *f.beam.beam;
  if (f.beam.alpha) eval.alpha = *f.beam.alpha;
  if (f.beam.max_length_offset) eval.max_length_offset = *f.beam.max_length_offset;
  if (f.bleu) eval.bleu = *f.bleu;
  if (f.lowercase) eval.lowercase = true;
  if (f.average) eval.average_last = *f.average;
  // Each member: a run's last checkpoints averaged when its settings (or --average) say so.
  std::vector<std::string> checkpoints;
  for (const std::string& p : f.paths) {
    std::string checkpoint = p;
    if (fs::is_directory(p) && eval.average_last > 1) {
      const auto n = static_cast<std::size_t>(eval.average_last);
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
  std::vector<nmt::LoadedModel> members = nmt::load_ensemble(checkpoints, load_plugins(), target_device);
  for (const auto& m : members)
    for (const auto& w : m.warnings) fmt::print(stderr, "warning: {}\n", w);
  const nmt::LoadedModel& model = members.front();
  const bool ensemble = members.size() > 1;
  if (!kept)
    fmt::print(stderr, "note: {} has no {} (trained by an older attnlab): default evaluation settings\n",
               run_dir.string(), nmt::kRunEvalFile);
  const std::string set_name = (source.empty() ? (test ? "test" : "dev") : fs::path(source).stem().string()) +
                               (ensemble ? "-ensemble" : "");
  if (source.empty()) {  // the run's own dev (or test) set
    nmt::ExperimentConfig c = model.config;
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
