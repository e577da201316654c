#include "attnlab/nmt/suite/suite_runner.h"

#include <algorithm>
#include <filesystem>
#include <functional>
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
#include "suite_run.h"

// run_suite: which rows, which of them need training, then the rows trained one after another in
// this process (run_rows_serially, here) or several at once in child processes (row_pool.cpp).

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

const SuiteRow* SuiteRun::next_row(const std::vector<const SuiteRow*>& todo, std::size_t& next,
                                   const std::set<std::string>& passed_over) const {
  if (searching()) return next_search_row(suite, todo, passed_over, false);
  return next < todo.size() ? todo[next++] : nullptr;
}

void SuiteRun::set_status(const SuiteRow& row, RowStatus status, const std::string& error) {
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

// Trains the rows one after another in this process (jobs <= 1), in the order next_row gives:
// under a search each row trains to the rung it may reach and on while promoted, and rows promoted
// by later results are taken up again. A failed row is recorded and the next one starts; an
// interrupted row (Ctrl-C) ends the run, to resume from it next time.
void run_rows_serially(SuiteRun& run, const std::vector<const SuiteRow*>& todo, const Registry& registry) {
  std::set<std::string> passed_over;  // rows that failed in this run, or (under a search) that another process has
  std::size_t next = 0;
  while (const SuiteRow* row = run.next_row(todo, next, passed_over)) {
    run.log(fmt::format("== {} (seed {}) -> {}", row->name, row->seed, row->config.run_dir));
    run.set_status(*row, RowStatus::kPending, "");
    const auto failed = [&](const std::exception& e) {
      run.set_status(*row, RowStatus::kFailed, e.what());
      run.log(fmt::format("{} (seed {}) failed: {}", row->name, row->seed, e.what()));
      ++run.summary.failed;
      passed_over.insert(row_key(*row));
    };
    try {
      const RowOutcome out = run_row(run.suite, *row, registry, {run.options.progress, run.log, run.options.no_prune});
      if (out.result) {
        run.set_status(*row, RowStatus::kDone, "");
        ++run.summary.done;
      } else {
        run.log(fmt::format("{} (seed {}): held at rung {} by the search", row->name, row->seed, out.held_at_rung));
      }
    } catch (const RowInterrupted& e) {
      run.set_status(*row, RowStatus::kPending, "");
      run.log(fmt::format("{}; run the same command again to resume", e.what()));
      run.summary.interrupted = true;
      return;
    } catch (const FolderInUse& e) {
      // Under a search another process took the row after next_search_row saw it free.
      if (!run.searching()) {
        failed(e);
        continue;
      }
      run.log(fmt::format("{} (seed {}): {}", row->name, row->seed, e.what()));
      passed_over.insert(row_key(*row));
    } catch (const std::exception& e) {
      failed(e);
    }
  }
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
  if (o.jobs <= 1) run_rows_serially(run, todo, registry);
  else run_rows_in_parallel(run, todo);
  settle_same_runs(run, selected);
  return run.summary;
}

}  // namespace attnlab::nmt
