#pragma once
// Where a suite's search stands (search.h), kept in <run_dir>/search.json and changed only under
// the lock of <run_dir>/search (SearchDecisions below), so that the processes training the rows
// (the runner itself, its --jobs children, Slurm tasks) decide on a current view and never twice:
//
//   {"method": "halving", "metric": "dev_ppl", "eta": 3, "rungs": [200, 600, 1800, 5400],
//    "rows": [{"key": "lr-1@1", "dir": "lr-1-s1-<hash>", "metrics": [5.1, 4.2], "allowed": 2, "failed": false, "error": "",
//              "no_prune": false}, ...]}
//
// metrics[k] is the row's metric at rung k (null: not a number), allowed the highest rung it may
// train to. A promotion is recorded with the result that caused it, in one atomic write.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/search.h"
#include "attnlab/nmt/suite/suite.h"

namespace attnlab::nmt {

struct SearchRowState {
  std::string key;                             // NAME@SEED (row_key)
  std::string dir;                             // the row's folder name: a changed row starts afresh
  std::vector<std::optional<double>> metrics;  // at rungs 0 .. reached - 1
  std::int64_t allowed = 0;                    // the highest rung index it may train to
  bool failed = false;                         // ended with an error before its next rung
  std::string error;
  bool no_prune = false;                       // finished with --no-prune, past the rule

  std::int64_t reached() const { return static_cast<std::int64_t>(metrics.size()); }
  // Measured at the rung it may reach and not promoted past it: nothing to train until the rule
  // promotes it (a row finishing with --no-prune is never held).
  bool held() const { return reached() > allowed && !no_prune; }
};

// Where a row stands in the search, for the runners, `attnlab status` and the report.
enum class SearchStanding { pending, promoted, waiting, stopped, finished, failed };
std::string_view search_standing_name(SearchStanding standing);
// Whether the rule holds the row at a rung: waiting there, or stopped for good.
inline bool held_at_rung(SearchStanding standing) {
  return standing == SearchStanding::waiting || standing == SearchStanding::stopped;
}

struct SearchState {
  SearchMethod method = SearchMethod::halving;
  SearchMetric metric = SearchMetric::dev_ppl;
  std::int64_t eta = 3;
  std::vector<std::int64_t> rungs;
  std::vector<SearchRowState> rows;  // the suite's rows that train, in suite order

  SearchRowState* find(std::string_view key);
  const SearchRowState* find(std::string_view key) const;
  // The row whose folder is named `dir` (the folder's name, not its path): a row changed since
  // search.json was written has another folder, and no entry.
  const SearchRowState* find_dir(std::string_view dir) const;
  // Whether no row can reach rung k any more: every row that has not failed was measured there
  // or will never be allowed to train to it.
  bool rung_closed(std::int64_t k) const;
  // Records `metric` as row `key`'s result at rung k (once: a repeated record, from a process
  // that was stopped after writing it, changes nothing), then promotes by the rule from every
  // rung (the record may close a rung above its own). Returns the keys promoted by this call.
  std::vector<std::string> record(std::string_view key, std::int64_t k, std::optional<double> metric);
  // Records that row `key` failed: it enters no ranking it has not entered yet, and the rows
  // waiting behind it are decided without it (a rung it held open may close: its best row goes
  // on). Returns the keys promoted by this call.
  std::vector<std::string> record_failure(std::string_view key, const std::string& error);
  // Where row `key` stands; `finished` is true when its result.json exists.
  SearchStanding standing(std::string_view key, bool finished) const;
  // The rung index the standing refers to: the rung it trains towards (pending, promoted), waits
  // or stopped at (waiting, stopped), or the last one (finished).
  std::int64_t standing_rung(std::string_view key, bool finished) const;
  // The total training steps the rows have done so far (rungs reached, the last one included).
  std::int64_t steps_trained() const;
  // The row with the best metric at the highest rung where a row was measured with one (ties: the
  // earlier row), that rung in `rung`; nullptr before any such measurement.
  const SearchRowState* best_so_far(std::int64_t& rung) const;

 private:
  std::vector<std::string> promote_from(std::int64_t k);
  std::vector<std::string> promote_all();
};

// ---- the search in words (search_text.cpp): the runners' logs, `attnlab status`, the report ----

// "dev_ppl 5.123", or "no dev_ppl" where the row had no number there (it diverged).
std::string search_metric_text(SearchMetric metric, std::optional<double> value);
// Row `key`'s standing in words (`finished`: its result.json exists): "pending, to rung 0 (20
// steps)", "promoted to rung 1 (60 steps)", "waiting at rung 0: dev_ppl 7.12", "stopped at rung 0:
// dev_ppl 7.12", "finished", "failed before rung 1 (60 steps)"; a row run with --no-prune is
// "to the end with --no-prune (180 steps)" until it is "finished with --no-prune".
std::string search_standing_text(const SearchState& state, std::string_view key, bool finished);
// The search in one line: its rule and rungs, the steps trained so far against the exhaustive
// grid's (every row to the last rung) and the best row so far (best_so_far): "halving by dev_ppl
// (lower is better), eta 3, rungs 20, 60, 180 steps; 540 of the full grid's 1620 steps trained
// (33 %; 9 rows x 180); best so far: lr-3@1, dev_ppl 5.123 at rung 2 (180 steps)".
std::string search_summary(const SearchState& state);

// Where a run stands in the search, as `attnlab status` and the report show it, found by the name
// of its folder (a run that search.json does not name, new or changed since, starts at rung 0).
struct RunStanding {
  SearchStanding standing = SearchStanding::pending;
  std::int64_t rung = 0;                  // standing_rung
  std::int64_t rung_steps = 0;            // that rung's steps
  std::optional<double> metric;           // its metric there, when measured there
  bool no_prune = false;
  std::string text;                       // search_standing_text
  std::string error;                      // failed: the search's record of why
};
RunStanding run_standing(const SearchState& state, std::string_view folder, bool finished);

// A fresh state for a suite with a search: every training row at rung 0.
SearchState make_search_state(const Suite& suite);

std::string search_state_to_json(const SearchState& state);
SearchState search_state_from_json(std::string_view text, const std::string& source_name);

// <run_dir>/search.json, or nullopt when the suite has no search file yet.
std::string search_state_path(const Suite& suite);
std::optional<SearchState> read_search_state(const std::string& path);

// The state of a suite's search under its lock: read (or created, and checked against the suite:
// a search.json written for other rungs or another metric is refused), changed, written back.
class SearchDecisions {
 public:
  explicit SearchDecisions(const Suite& suite);
  SearchState& state() { return state_; }
  void save() const;

 private:
  FolderLock lock_;
  std::string path_;
  SearchState state_;
};

}  // namespace attnlab::nmt
