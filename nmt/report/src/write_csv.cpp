// The report as CSV (RFC 4180 quoting), one line per row, means and standard deviations in their own columns.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>
#include <cstdint>

#include <fmt/core.h>

#include "table.h"
#include "writers.h"

namespace attnlab::nmt::detail {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

// A search column of a row: its runs' values, once when they agree, else each run's joined by ";"
// ("" for a run outside the search); empty without a search.
std::string search_field(const ReportRow& row, const std::function<std::string(const RunSearch&)>& value) {
  std::vector<std::string> values;
  for (const ReportRun& run : row.runs) values.push_back(run.search ? value(*run.search) : "");
  if (std::all_of(values.begin(), values.end(), [&](const std::string& v) { return v == values.front(); }))
    return values.empty() ? "" : values.front();
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) out.append(i ? ";" : "").append(values[i]);
  return out;
}

}  // namespace

std::string render_csv(const Report& report) {
  std::string out =
      "row,status,seeds,seeds_done,settings,params_m,steps,train_seconds,tokens_per_second,dev_ppl,dev_ppl_std,"
      "delta_ppl,bleu,bleu_std,delta_bleu,bootstrap_p,paper_ppl,paper_bleu,paper_params_m,paper_delta_ppl,"
      "paper_delta_bleu,ppl_direction,ppl_outside_noise,bleu_direction,bleu_outside_noise,bootstrap_p_worse,bleu_mode,"
      "bleu_signature,error,search_state,rung,rung_steps,rung_metric";
  const bool test = any_test(report);
  out += test ? ",test_ppl,test_bleu\n" : "\n";
  const auto opt = [](const std::optional<double>& v, int digits) { return v ? fixed(*v, digits) : std::string(); };
  const auto direction = [](const EffectCheck& e) -> std::string { return e.agrees ? (*e.agrees ? "agrees" : "differs") : ""; };
  for (const ReportRow& row : report.rows) {
    const bool has = row.done > 0;
    std::string mode, signature, error;
    for (const ReportRun& run : row.runs) {
      if (run.result && mode.empty()) mode = run.result->bleu_mode, signature = run.result->bleu_signature;
      if ((run.status == RowStatus::kFailed || run.status == RowStatus::kSkipped) && error.empty()) error = run.error;
    }
    std::vector<std::string> f{
        row.name,
        row.status_text(),
        std::to_string(row.runs.size()),
        std::to_string(row.done),
        settings_text(row.settings),
        has ? fixed(row.params.mean / 1e6, 3) : "",
        has ? fixed(row.steps.mean, 0) : "",
        has ? fixed(row.train_seconds.mean, 1) : "",
        has ? fixed(row.tokens_per_second.mean, 1) : "",
        has ? fixed(row.dev_ppl.mean, 4) : "",
        has ? fixed(row.dev_ppl.std, 4) : "",
        opt(row.delta_ppl, 4),
        has ? fixed(row.bleu.mean, 4) : "",
        has ? fixed(row.bleu.std, 4) : "",
        opt(row.delta_bleu, 4),
        row.bootstrap ? fixed(row.bootstrap->p_value, 4) : "",
        row.paper ? opt(row.paper->ppl, 2) : "",
        row.paper ? opt(row.paper->bleu, 2) : "",
        row.paper ? opt(row.paper->params_m, 1) : "",
        opt(row.ppl_effect.paper_delta, 2),
        opt(row.bleu_effect.paper_delta, 2),
        direction(row.ppl_effect),
        row.ppl_effect.agrees ? (row.ppl_effect.outside_noise ? "yes" : "no") : "",
        direction(row.bleu_effect),
        row.bleu_effect.agrees ? (row.bleu_effect.outside_noise ? "yes" : "no") : "",
        row.bootstrap ? fixed(row.bootstrap->p_worse, 4) : "",
        mode,
        signature,
        error,
        search_field(row, [](const RunSearch& s) { return std::string(search_standing_name(s.standing)); }),
        search_field(row, [](const RunSearch& s) { return std::to_string(s.rung); }),
        search_field(row, [](const RunSearch& s) { return std::to_string(s.rung_steps); }),
        search_field(row, [](const RunSearch& s) { return s.metric ? fixed(*s.metric, 4) : std::string(); })};
    if (test) {
      f.push_back(row.test_ppl.n ? fixed(row.test_ppl.mean, 4) : "");
      f.push_back(row.test_bleu.n ? fixed(row.test_bleu.mean, 4) : "");
    }
    for (std::size_t i = 0; i < f.size(); ++i) out.append(i ? "," : "").append(csv_field(f[i]));
    out += "\n";
  }
  return out;
}

}  // namespace attnlab::nmt::detail
