#include "attnlab/nmt/suite/suite_runner.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>

#include "attnlab/error.h"
#include "attnlab/nmt/checkpoint/average.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/eval/evaluation.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "attnlab/nmt/train/trainer.h"
#include "attnlab/nmt/train/training_summary.h"
#include "row_scheduler.h"
#include "suite_run.h"

// run_suite: which rows, which of them need training, then the rows scheduled (row_scheduler.h)
// one after another in this process or several at once in child processes (row_pool.cpp); and
// run_task, a Slurm task's rows.

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

}  // namespace

Evaluation evaluate_row_on_dev(const SuiteRow& row, const std::string& checkpoint, const Registry& registry) {
  const ExperimentConfig& c = row.config;
  LoadedModel model = load_model(checkpoint, registry, Device::parse(c.device));
  std::string source = c.data.dev_source, reference = c.data.dev_target;
  if (c.data.synthetic) {
    source = synthetic_corpus_dir(c) + "/dev.src";
    reference = synthetic_corpus_dir(c) + "/dev.tgt";
  }
  ATTNLAB_CHECK(!source.empty(), "row {}: the experiment has no dev set to evaluate on (data.dev_source)", row.name);
  return evaluate_model(model, source, reference, c.eval);
}

TrainResult train_row(const SuiteRow& row, const Registry& registry, const RowRunOptions& o, std::int64_t pause_at_step) {
  TrainOptions options;
  options.run_dir_locked = true;
  options.progress = o.progress;
  options.pause_at_step = pause_at_step;
  if (o.log && !o.progress) options.log = o.log;
  const TrainResult trained = train(row.config, registry, options);
  if (trained.interrupted) throw RowInterrupted(fmt::format("row {} interrupted at step {}", row.name, trained.steps));
  return trained;
}

RowResult finish_row(const SuiteRow& row, const Registry& registry, const RowRunOptions& o,
                     const TrainResult* trained_already) {
  const ExperimentConfig& c = row.config;
  const TrainResult trained = trained_already ? *trained_already : train_row(row, registry, o, 0);

  std::string checkpoint = c.run_dir;
  if (c.eval.average_last > 1) {
    const auto n = static_cast<std::size_t>(c.eval.average_last);
    checkpoint = average_last_path(c.run_dir, n).string();
    average_last(c.run_dir, n, checkpoint);
  }
  const Evaluation e = evaluate_row_on_dev(row, checkpoint, registry);
  write_lines((fs::path(c.run_dir) / "dev.hyp").string(), e.hypotheses);

  RowResult r;
  r.row = row.name;
  r.seed = row.seed;
  r.steps = trained.steps;
  r.parameters = trained.parameters;
  const TrainingSummary stats = read_training_summary(fs::path(c.run_dir) / "metrics.jsonl");
  r.train_seconds = stats.seconds;
  r.tokens_per_second = stats.tokens_per_second;
  r.dev_ppl = e.scores.perplexity();
  r.dev_ppl_smoothed = e.scores.smoothed_perplexity();
  r.bleu = e.bleu.score;
  r.bleu_signature = e.bleu_signature;
  r.bleu_mode = e.bleu_mode;
  r.beam = c.eval.beam;
  r.alpha = c.eval.alpha;
  write_row_result((fs::path(c.run_dir) / "result.json").string(), r);
  if (o.log) o.log(fmt::format("{} (seed {}): dev ppl {:.3f}, BLEU {:.2f} ({}), {} parameters, {} steps", row.name,
                               row.seed, r.dev_ppl, r.bleu, r.bleu_mode, r.parameters, r.steps));
  return r;
}

RowOutcome run_row(const Suite& suite, const SuiteRow& row, const Registry& registry, const RowRunOptions& o) {
  // The row's folder is this process's from training to result.json.
  const FolderLock lock =
      FolderLock::acquire(row.config.run_dir, fmt::format("row {} (seed {}): run folder", row.name, row.seed));
  if (suite.search) return run_search_row(suite, row, registry, o);
  return {finish_row(row, registry, o, nullptr), -1};
}

void SuiteRun::save_state() const { write_suite_state((fs::path(suite.run_dir) / "suite.json").string(), state); }

void SuiteRun::set_status(const SuiteRow& row, RowStatus status, const std::string& error) {
  if (!keeps_state) return;
  if (SuiteRowState* entry = state.find(row.name, row.seed)) entry->status = status, entry->error = error;
  save_state();
}

namespace {

// The rows named in `names` in the suite's order, all of them when it is empty; an unknown name is
// an error that lists the suite's rows.
std::vector<const SuiteRow*> select_rows(const Suite& suite, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    bool found = false;
    for (const auto& row : suite.rows) found = found || row.name == name;
    if (!found) {
      std::vector<std::string> known;
      for (const auto& row : suite.rows) known.push_back(row.name);
      throw Error(fmt::format("suite {} has no row '{}' (rows: {})", suite.name, name, fmt::join(known, ", ")));
    }
  }
  std::vector<const SuiteRow*> selected;
  for (const auto& row : suite.rows)
    if (names.empty() || std::find(names.begin(), names.end(), row.name) != names.end()) selected.push_back(&row);
  return selected;
}

// The selected rows that need training; the others are logged and counted with the reason.
std::vector<const SuiteRow*> rows_to_train(SuiteRun& run, const std::vector<const SuiteRow*>& selected) {
  std::vector<const SuiteRow*> todo;
  for (const SuiteRow* row : selected) {
    if (!row->skipped.empty()) {
      run.log(fmt::format("{} (seed {}): skipped (unsupported = \"skip\"): {}", row->name, row->seed, row->skipped));
      ++run.summary.unsupported;
    } else if (!row->same_as.empty()) {
      run.log(fmt::format("{} (seed {}): the same run as {} ({}), trained once", row->name, row->seed, row->same_as,
                          row->config.run_dir));
      ++run.summary.same;
    } else if (fs::exists(fs::path(row->config.run_dir) / "result.json")) {
      // A row whose result exists is done, whatever an earlier suite.json said.
      run.log(fmt::format("{} (seed {}): finished earlier, skipped ({})", row->name, row->seed, row->config.run_dir));
      run.set_status(*row, RowStatus::kDone, "");
      ++run.summary.skipped;
    } else if (auto holder = FolderLock::holder(row->config.run_dir)) {
      // Trained by another process (a scheduler's task, another `attnlab run`): not a second writer.
      run.log(fmt::format("{} (seed {}): running in another process (pid {} on {}), skipped", row->name, row->seed,
                          holder->pid, holder->host));
      ++run.summary.skipped;
    } else {
      todo.push_back(row);
    }
  }
  return todo;
}

// The rows of `todo` in order, or under a search in the order next_search_row gives (promotions
// first, read again each time).
RowPicker suite_order(const SuiteRun& run, const std::vector<const SuiteRow*>& todo) {
  if (run.searching())
    return [&run, &todo](const std::set<std::string>& excluded) {
      return next_search_row(run.suite, todo, excluded, false);
    };
  return [&todo, next = std::size_t{0}](const std::set<std::string>& excluded) mutable -> const SuiteRow* {
    while (next < todo.size()) {
      const SuiteRow* row = todo[next++];
      if (!excluded.count(row_key(*row))) return row;
    }
    return nullptr;
  };
}

// A row that is the same run as another: done when that run is.
void settle_same_runs(SuiteRun& run, const std::vector<const SuiteRow*>& selected) {
  for (const SuiteRow* row : selected)
    if (!row->same_as.empty() && fs::exists(fs::path(row->config.run_dir) / "result.json"))
      run.set_status(*row, RowStatus::kDone, "");
}

}  // namespace

SuiteRunSummary run_suite(const Suite& suite, const Registry& registry, const SuiteRunOptions& o) {
  SuiteRun run{suite, o,
               [&o](const std::string& line) {
                 if (o.log) o.log(line);
                 else fmt::print(stderr, "{}\n", line);
               },
               make_suite_state(suite), {}};
  fs::create_directories(suite.run_dir);
  const std::vector<const SuiteRow*> selected = select_rows(suite, o.rows);
  run.save_state();
  const std::vector<const SuiteRow*> todo = rows_to_train(run, selected);
  if (o.jobs <= 1) {
    InProcessRows here(suite, registry, [&run](const SuiteRow&) {
      return RowRunOptions{run.options.progress, run.log, run.options.no_prune};
    });
    schedule_rows(run, suite_order(run, todo), here);
  } else {
    const std::unique_ptr<RowExecutor> children = child_process_rows(run);
    schedule_rows(run, suite_order(run, todo), *children);
  }
  settle_same_runs(run, selected);
  return run.summary;
}

SuiteRunSummary run_task(const Suite& suite, const SuiteRow& row, const Registry& registry, const RowRunOptions& o,
                         bool take_promoted) {
  SuiteRunOptions options;
  options.progress = o.progress;
  options.no_prune = o.no_prune;
  const auto log = [&o](const std::string& line) {
    if (o.log) o.log(line);
    else fmt::print(stderr, "{}\n", line);
  };
  SuiteRun run{suite, options, log, {}, {}};
  run.keeps_state = false;
  std::vector<const SuiteRow*> rows;
  for (const SuiteRow& r : suite.rows) rows.push_back(&r);
  const std::string own = row_key(row);
  bool own_started = false;
  const RowPicker pick = [&](const std::set<std::string>& excluded) -> const SuiteRow* {
    if (!own_started) return own_started = true, &row;
    if (!take_promoted || !run.searching()) return nullptr;
    return next_search_row(suite, rows, excluded, true);
  };
  InProcessRows here(suite, registry, [&](const SuiteRow& r) {
    if (row_key(r) == own) return o;
    // A promoted row's lines go to its own run.log, as when its own task trains it, after a line
    // saying which task took it.
    log(fmt::format("== promoted row {} (seed {}) -> {} (log: its run.log)", r.name, r.seed, r.config.run_dir));
    RowRunOptions promoted = o;
    promoted.log = [log_path = r.config.run_dir + "/run.log"](const std::string& line) {
      if (std::FILE* f = std::fopen(log_path.c_str(), "a")) {
        fmt::print(f, "{}\n", line);
        std::fclose(f);
      }
    };
    promoted.log(fmt::format("== promoted row {} (seed {}) taken by the task of {}", r.name, r.seed, own));
    return promoted;
  });
  schedule_rows(run, pick, here);
  return run.summary;
}

}  // namespace attnlab::nmt
