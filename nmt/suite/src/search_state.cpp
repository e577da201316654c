// The search's decisions (search_state.h): recording rung results, the rule's promotions, the
// rows' standings, and search.json under its lock (its text: search_json.cpp).
#include "attnlab/nmt/suite/search_state.h"

#include <cmath>
#include <filesystem>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/error.h"
#include "attnlab/nmt/io/file_util.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kStandingNames[] = {"pending", "promoted", "waiting", "stopped", "finished", "failed"};

}  // namespace

std::string_view search_standing_name(SearchStanding standing) {
  return kStandingNames[static_cast<std::size_t>(standing)];
}

SearchRowState* SearchState::find(std::string_view key) {
  for (auto& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

const SearchRowState* SearchState::find(std::string_view key) const {
  return const_cast<SearchState*>(this)->find(key);
}

const SearchRowState* SearchState::find_dir(std::string_view dir) const {
  for (const auto& r : rows)
    if (r.dir == dir) return &r;
  return nullptr;
}

bool SearchState::rung_closed(std::int64_t k) const {
  // Bottom up: a row not measured at rung j gets there if it may train to j, or if the lower rung
  // it stands at is still open (it may yet be promoted from there).
  std::vector<bool> closed;
  for (std::int64_t j = 0; j <= k; ++j) {
    bool c = true;
    for (const SearchRowState& r : rows)
      if (!r.failed && r.reached() <= j && (r.allowed >= j || !closed[static_cast<std::size_t>(r.allowed)])) c = false;
    closed.push_back(c);
  }
  return closed.back();
}

std::vector<std::string> SearchState::promote_from(std::int64_t k) {
  // The rows the rule let train to rung k and measured there. A row finished with --no-prune past
  // the rung where the rule held it has metrics above it too, which the rule never asked for: they
  // enter no ranking, or its arrival could promote a row that a closed rung stopped for good.
  std::vector<RungEntry> entries;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].reached() > k && rows[i].allowed >= k)
      entries.push_back({i, rows[i].metrics[static_cast<std::size_t>(k)], rows[i].allowed > k});
  std::vector<std::string> promoted;
  for (std::size_t i : promotions_at_rung(entries, eta, higher_is_better(metric), rung_closed(k))) {
    rows[i].allowed = k + 1;
    promoted.push_back(rows[i].key);
  }
  return promoted;
}

std::vector<std::string> SearchState::record(std::string_view key, std::int64_t k, std::optional<double> value) {
  SearchRowState* r = find(key);
  ATTNLAB_CHECK(r != nullptr, "search: no row {} in the search", key);
  ATTNLAB_CHECK(k >= 0 && k < static_cast<std::int64_t>(rungs.size()), "search: no rung {} (the search has {})", k,
                rungs.size());
  if (r->reached() > k) return {};  // recorded before
  ATTNLAB_CHECK(r->reached() == k, "search: row {} reports rung {} but was measured only up to rung {}", key, k,
                r->reached() - 1);
  if (value && !std::isfinite(*value)) value.reset();  // a diverged row ranks nowhere
  r->metrics.push_back(value);
  r->failed = false, r->error.clear();
  return promote_all();
}

std::vector<std::string> SearchState::promote_all() {
  // Lower rungs first: a row that stays at rung k may be what closes rung k + 1.
  std::vector<std::string> promoted;
  for (std::int64_t k = 0; k + 1 < static_cast<std::int64_t>(rungs.size()); ++k)
    for (std::string& p : promote_from(k)) promoted.push_back(std::move(p));
  return promoted;
}

std::vector<std::string> SearchState::record_failure(std::string_view key, const std::string& error) {
  SearchRowState* r = find(key);
  ATTNLAB_CHECK(r != nullptr, "search: no row {} in the search", key);
  r->failed = true;
  r->error = error;
  // The row no longer holds up the rungs it would have reached: one of them may close now.
  return promote_all();
}

SearchStanding SearchState::standing(std::string_view key, bool finished) const {
  const SearchRowState* r = find(key);
  if (finished) return SearchStanding::finished;
  if (!r) return SearchStanding::pending;
  if (r->failed) return SearchStanding::failed;
  if (r->reached() == 0) return SearchStanding::pending;
  if (r->reached() >= static_cast<std::int64_t>(rungs.size())) return SearchStanding::finished;
  if (!r->held()) return SearchStanding::promoted;
  return rung_closed(r->allowed) ? SearchStanding::stopped : SearchStanding::waiting;
}

std::int64_t SearchState::standing_rung(std::string_view key, bool finished) const {
  const SearchRowState* r = find(key);
  const auto last = static_cast<std::int64_t>(rungs.size()) - 1;
  if (finished || !r) return finished ? last : 0;
  if (r->no_prune) return last;
  return std::min(r->allowed, last);
}

std::int64_t SearchState::steps_trained() const {
  std::int64_t steps = 0;
  for (const SearchRowState& r : rows)
    if (r.reached() > 0) steps += rungs[static_cast<std::size_t>(r.reached() - 1)];
  return steps;
}

const SearchRowState* SearchState::best_so_far(std::int64_t& rung) const {
  const SearchRowState* best = nullptr;
  const bool higher = higher_is_better(metric);
  for (std::int64_t k = static_cast<std::int64_t>(rungs.size()) - 1; k >= 0 && !best; --k) {
    for (const SearchRowState& r : rows) {
      if (r.reached() <= k) continue;
      const std::optional<double>& m = r.metrics[static_cast<std::size_t>(k)];
      const std::optional<double> b = best ? best->metrics[static_cast<std::size_t>(k)] : std::nullopt;
      if (m && (!b || (higher ? *m > *b : *m < *b))) best = &r;
    }
    if (best) rung = k;
  }
  return best;
}

SearchState make_search_state(const Suite& suite) {
  ATTNLAB_CHECK(suite.search.has_value(), "suite {} has no [search]", suite.name);
  SearchState s;
  s.method = suite.search->method;
  s.metric = suite.search->metric;
  s.eta = suite.search->eta;
  s.rungs = search_rungs(*suite.search);
  for (const SuiteRow& row : suite.rows)
    if (row.skipped.empty() && row.same_as.empty())
      s.rows.push_back({row_key(row), fs::path(row.config.run_dir).filename().string(), {}, 0, false, "", false});
  return s;
}

SearchDecisions::SearchDecisions(const Suite& suite)
    : lock_(FolderLock::acquire_waiting((fs::path(suite.run_dir) / "search").string(), "search decisions")),
      path_(search_state_path(suite)),
      state_(make_search_state(suite)) {
  const std::optional<SearchState> saved = read_search_state(path_);
  if (!saved) return;
  ATTNLAB_CHECK(saved->metric == state_.metric && saved->eta == state_.eta && saved->rungs == state_.rungs,
                "{}: the search there ranks by {} with eta {} at rungs [{}], but suite {} asks for {} with eta {} at "
                "rungs [{}]; give the changed search a run_dir of its own",
                path_, search_metric_name(saved->metric), saved->eta, fmt::join(saved->rungs, ", "), suite.name,
                search_metric_name(state_.metric), state_.eta, fmt::join(state_.rungs, ", "));
  // The saved standing of every row whose configuration is unchanged; a changed row starts afresh.
  for (SearchRowState& row : state_.rows)
    if (const SearchRowState* old = saved->find(row.key); old && old->dir == row.dir) row = *old;
}

void SearchDecisions::save() const { detail::write_file_atomic(path_, search_state_to_json(state_)); }

}  // namespace attnlab::nmt
