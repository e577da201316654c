// [search] of a suite file (search_toml.h).
#include "search_toml.h"

#include <fmt/core.h>

#include "attnlab/error.h"

namespace attnlab::nmt::suite_detail {

SearchTable read_search_table(config::TableReader& t) {
  SearchTable s;
  s.spec.position = t.position();
  const std::string method = t.get_string("method", "halving");
  const std::optional<SearchMethod> known_method = kSearchMethods.find(method);
  if (!known_method)
    throw Error(fmt::format("{}: {}: {}", t.position("method"), t.path("method"), kSearchMethods.unknown(method)));
  s.spec.method = *known_method;
  const std::string metric = t.get_string("metric", "dev_ppl");
  s.metric_at = t.has("metric") ? t.position("metric") : s.spec.position;
  const std::optional<SearchMetric> known_metric = kSearchMetrics.find(metric);
  if (!known_metric)
    throw Error(fmt::format("{}: {}: {} (dev_ppl: lower is better; dev_bleu: higher is better)", t.position("metric"),
                            t.path("metric"), kSearchMetrics.unknown(metric)));
  s.spec.metric = *known_metric;
  s.spec.eta = t.get_int("eta", 3);
  if (s.spec.eta < 2)
    throw Error(fmt::format("{}: {}: eta must be an integer >= 2 (the share of rows a rung keeps is 1/eta), got {}",
                            t.position("eta"), t.path("eta"), s.spec.eta));
  if (!t.has("first_rung"))
    throw Error(fmt::format("{}: search: first_rung is missing: the steps every row trains before the first "
                            "decision",
                            s.spec.position));
  s.spec.first_rung = t.get_int("first_rung", 0);
  s.first_rung_at = t.position("first_rung");
  if (s.spec.first_rung <= 0)
    throw Error(fmt::format("{}: {}: must be > 0 steps, got {}", s.first_rung_at, t.path("first_rung"),
                            s.spec.first_rung));
  s.spec.max_steps = t.get_int("max_steps", 0);
  s.max_steps_at = t.has("max_steps") ? t.position("max_steps") : std::string();
  if (t.has("max_steps") && s.spec.max_steps <= 0)
    throw Error(fmt::format("{}: {}: must be > 0 steps, got {}", s.max_steps_at, t.path("max_steps"), s.spec.max_steps));
  t.finish();
  return s;
}

void apply_search_steps(const SearchTable& search, SuiteRow& row) {
  if (search.spec.max_steps <= 0) return;
  for (const auto& [key, value] : row.settings)
    if (key == "training.max_steps") return;
  row.config.training.max_steps = search.spec.max_steps;
}

void check_search(const SearchTable& search, Suite& suite) {
  SearchSpec& spec = *suite.search;
  const SuiteRow* first = nullptr;
  for (const SuiteRow& row : suite.rows) {
    const TrainingConfig& t = row.config.training;
    if (!first) first = &row;
    if (spec.max_steps <= 0) spec.max_steps = t.max_steps;
    if (t.max_steps != spec.max_steps)
      throw Error(fmt::format("{}: row {} trains {} steps, but the search's rows all train to {} ({}); a search "
                              "compares rows at the same rungs",
                              row.position, row.name, t.max_steps, spec.max_steps,
                              search.max_steps_at.empty() ? "training.max_steps of row " + first->name
                                                          : "search.max_steps at " + search.max_steps_at));
    const DataConfig& d = row.config.data;
    if (d.synthetic ? d.synth.dev_pairs <= 0 : d.dev_source.empty())
      throw Error(fmt::format("{}: search: row {} has no dev set (data.dev_source) to rank it by {} at the rungs",
                              spec.position, row.name, search_metric_name(spec.metric)));
    if (spec.metric == SearchMetric::dev_ppl && spec.first_rung % t.eval_every != 0)
      throw Error(fmt::format("{}: search.first_rung: {} is not a multiple of training.eval_every ({}, row {}): ranking "
                              "by dev_ppl reads the dev evaluation at each rung",
                              search.first_rung_at, spec.first_rung, t.eval_every, row.name));
  }
  if (spec.first_rung >= spec.max_steps)
    throw Error(fmt::format("{}: search.first_rung: {} steps is not below max_steps ({}): no row would ever be "
                            "stopped",
                            search.first_rung_at, spec.first_rung, spec.max_steps));
}

}  // namespace attnlab::nmt::suite_detail
