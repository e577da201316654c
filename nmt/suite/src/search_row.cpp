// A row under the suite's search (search.h): trained to the rung it may reach, measured there,
// ranked under the decisions' lock, and on while it is promoted. Whatever stops the process (Ctrl-C,
// kill -9) leaves either the rung's checkpoint unrecorded, which the next run measures again from
// the same checkpoint, or the decision written: the decisions do not change across a resume.
#include <filesystem>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/error.h"
#include "attnlab/nmt/checkpoint/checkpoint_store.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/search_state.h"
#include "attnlab/nmt/train/training_summary.h"
#include "suite_run.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

// The row's training log (metrics.jsonl).
TrainingSummary row_log(const SuiteRow& row) { return read_training_summary(fs::path(row.config.run_dir) / "metrics.jsonl"); }

// The dev perplexity the trainer logged at `step` (its last evaluation there), if it logged one.
std::optional<double> logged_dev_ppl(const TrainingSummary& log, std::int64_t step) {
  for (auto it = log.dev_ppl.rbegin(); it != log.dev_ppl.rend(); ++it)
    if (it->step == step) return it->value;
  return std::nullopt;
}

// The row's metric at `step`: the dev evaluation the trainer logged there (dev_ppl), or BLEU of the
// dev set decoded by the model saved at that step (dev_bleu).
std::optional<double> rung_metric(const SuiteRow& row, SearchMetric metric, std::int64_t step,
                                  const Registry& registry) {
  if (metric == SearchMetric::dev_ppl) {
    if (const std::optional<double> ppl = logged_dev_ppl(row_log(row), step)) return ppl;
    throw Error(fmt::format("row {}: no dev evaluation at step {} in {}/metrics.jsonl", row.name, step,
                            row.config.run_dir));
  }
  const std::string checkpoint = CheckpointStore(row.config.run_dir, 1).path_for(step).string();
  ATTNLAB_CHECK(fs::exists(checkpoint), "row {}: no checkpoint of step {} ({}) to measure the rung with", row.name, step,
                checkpoint);
  return evaluate_row_on_dev(row, checkpoint, registry).bleu.score;
}

// The metric a finished row reports at rung k: for the last rung its result's, before it the dev
// perplexity the trainer logged there (none for BLEU, which was not decoded there).
std::optional<double> finished_metric(const TrainingSummary& log, const SearchState& s, std::int64_t k,
                                      const RowResult& r) {
  const bool last = k + 1 == static_cast<std::int64_t>(s.rungs.size());
  if (last) return s.metric == SearchMetric::dev_bleu ? r.bleu : r.dev_ppl;
  if (s.metric == SearchMetric::dev_bleu) return std::nullopt;
  return logged_dev_ppl(log, s.rungs[static_cast<std::size_t>(k)]);
}

// Logs what a decision did.
void log_decision(const RowRunOptions& o, const SearchState& s, const SuiteRow& row, std::int64_t k,
                  const std::vector<std::string>& promoted) {
  if (!o.log) return;
  const SearchRowState* me = s.find(row_key(row));
  std::int64_t measured = 0;
  for (const SearchRowState& r : s.rows) measured += r.reached() > k;
  // A record may promote from other rungs too (it can close the rung above): each key with its rung.
  std::vector<std::string> went_on;
  for (const std::string& key : promoted) went_on.push_back(fmt::format("{} to rung {}", key, s.find(key)->allowed));
  o.log(fmt::format("{} (seed {}): {} at rung {} ({} steps), {} row(s) measured there{}", row.name, row.seed,
                    search_metric_text(s.metric, me->metrics[static_cast<std::size_t>(k)]), k, s.rungs[static_cast<std::size_t>(k)],
                    measured, went_on.empty() ? "" : fmt::format("; promoted: {}", fmt::join(went_on, ", "))));
}

// Records the finished row's metrics at the rungs it has not reported (a row finished with
// --no-prune passes them without stopping), the last one from its result.
void record_finished(const Suite& suite, const SuiteRow& row, const RowResult& result, const RowRunOptions& o) {
  SearchDecisions d(suite);
  SearchState& s = d.state();
  const std::string key = row_key(row);
  SearchRowState* me = s.find(key);
  if (!me) return;
  const TrainingSummary log = row_log(row);
  for (std::int64_t k = me->reached(); k < static_cast<std::int64_t>(s.rungs.size()); ++k) {
    const std::vector<std::string> promoted = s.record(key, k, finished_metric(log, s, k, result));
    log_decision(o, s, row, k, promoted);
  }
  d.save();
}

}  // namespace

RowOutcome run_search_row(const Suite& suite, const SuiteRow& row, const Registry& registry,
                          const RowRunOptions& o) {
  const std::string key = row_key(row);
  // To the end (or from where training ended), evaluated, and its metrics recorded at every rung.
  const auto finish = [&](const TrainResult* trained) -> RowOutcome {
    const RowResult r = finish_row(row, registry, o, trained);
    record_finished(suite, row, r, o);
    return {r, -1};
  };
  try {
    if (o.no_prune) {
      SearchDecisions d(suite);
      if (SearchRowState* me = d.state().find(key)) me->no_prune = true, me->failed = false;
      d.save();
    }
    for (;;) {
      std::int64_t k = 0, last = 0, step = 0;
      SearchMetric metric_kind = SearchMetric::dev_ppl;
      {
        SearchDecisions d(suite);
        SearchState& s = d.state();
        const SearchRowState* me = s.find(key);
        ATTNLAB_CHECK(me != nullptr, "search: row {} is not in the search", key);
        last = static_cast<std::int64_t>(s.rungs.size()) - 1;
        if (me->held()) return {std::nullopt, me->allowed};  // measured there, not promoted
        k = me->no_prune ? last : me->allowed;  // a row once asked to finish goes on to the end
        step = s.rungs[static_cast<std::size_t>(k)];
        metric_kind = s.metric;
      }
      if (k == last) return finish(nullptr);
      const TrainResult trained = train_row(row, registry, o, step);
      // Ended before the rung (early stopping, a time budget): that is its end.
      if (!trained.paused) return finish(&trained);
      const std::optional<double> metric = rung_metric(row, metric_kind, step, registry);
      SearchDecisions d(suite);
      const std::vector<std::string> promoted = d.state().record(key, k, metric);
      d.save();
      log_decision(o, d.state(), row, k, promoted);
      if (d.state().find(key)->allowed <= k) return {std::nullopt, k};
    }
  } catch (const RowInterrupted&) {
    throw;
  } catch (const FolderInUse&) {
    throw;
  } catch (const std::exception& e) {
    SearchDecisions d(suite);
    d.state().record_failure(key, e.what());
    d.save();
    throw;
  }
}

}  // namespace attnlab::nmt
