// attnlab report on what a search spent: its runs' training time (metrics.jsonl, summed over
// invocations) times their threads (manifest.json) beside the full grid at each run's pace, the
// dev decodings of a BLEU search's rungs, and each source's search in a report of several.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/nmt/report/report.h"
#include "attnlab/nmt/suite/search_state.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "nmt_test_util.h"
#include "report_fixtures.h"

namespace attnlab::nmt {
namespace {

using namespace testing;  // nmt_test_util.h, report_fixtures.h

// metrics.jsonl of a run trained in invocations, each {steps, seconds}: a log line every 100 steps
// with the invocation's elapsed time (the trainer's clock restarts with each invocation).
std::string invocations_log(const std::vector<std::pair<std::int64_t, double>>& invocations) {
  std::string s;
  std::int64_t step = 0;
  for (const auto& [steps, seconds] : invocations) {
    s += fmt::format("{{\"kind\":\"start\",\"step\":{},\"parameters\":1000,\"resumed\":{}}}\n", step, step > 0);
    const std::int64_t from = step;
    for (step += 100; step <= from + steps; step += 100)
      s += fmt::format("{{\"kind\":\"train\",\"step\":{},\"loss\":2,\"lr\":0.001,\"elapsed\":{}}}\n", step,
                       seconds * static_cast<double>(step - from) / static_cast<double>(steps));
    step -= 100;
  }
  return s;
}

void write_manifest_threads(const std::string& dir, int threads) {
  write_text(dir + "/manifest.json", fmt::format("{{\"machine\":{{\"cpu\":\"test\",\"threads\":{}}}}}", threads));
}

// A search (dev_bleu unless `metric` says otherwise), eta 2, rungs 200 and 600 steps, four rows:
//   base@1  200 steps in 100 s + 400 in 300 s on 2 threads (finished; two invocations)
//   lr@1    200 steps in 150 s on 2 threads, waiting at rung 0 (wide may reach it)
//   deep@1  200 steps in 300 s on one thread (no thread count recorded), waiting at rung 0
//   wide@1  not started
// `same`: a fifth row, the same run as base (its folder), which counts once. `metric`: what the
// rungs rank by (the values above read as that metric's).
void build_search(const TempDir& dir, bool same, SearchMetric metric = SearchMetric::dev_bleu) {
  SuiteState suite;
  suite.name = "search-cost";
  suite.source = "experiments/search-cost.toml";
  SearchState search;
  search.metric = metric;
  search.eta = 2;
  search.rungs = {200, 600};
  const auto add = [&](const std::string& name, std::vector<std::pair<std::int64_t, double>> runs,
                       std::vector<std::optional<double>> metrics, int threads) {
    SuiteRowState r = make_row_state(name, 1, {{"model.heads", name}});
    suite.rows.push_back(r);
    const std::string path = (dir.path() / r.dir).string();
    std::filesystem::create_directories(path);
    if (!runs.empty()) write_text(path + "/metrics.jsonl", invocations_log(runs));
    if (threads > 0) write_manifest_threads(path, threads);
    search.rows.push_back({name + "@1", r.dir, std::move(metrics), 0, false, "", false});
    return path;
  };
  const std::string base = add("base", {{200, 100.0}, {400, 300.0}}, {30.0, 35.0}, 2);
  write_row_result(base + "/result.json", make_result("base", 1, 5.0, 35.0));
  suite.rows.back().status = RowStatus::kDone;
  add("lr", {{200, 150.0}}, {28.0}, 2);
  add("deep", {{200, 300.0}}, {27.0}, 0);
  add("wide", {}, {}, 0);
  if (same) {
    SuiteRowState r = make_row_state("base-again", 1, {});
    r.dir = suite.rows.front().dir;
    r.same_as = "base";
    suite.rows.push_back(r);
  }
  write_suite_state(dir.file("suite.json"), suite);
  write_text(dir.file("search.json"), search_state_to_json(search));
}

}  // namespace

TEST_CASE("a search's report says what it spent beside the full grid at each run's pace") {
  TempDir dir("report_search_cost");
  build_search(dir, /*same=*/true);
  const Report report = build_report(dir.path().string());
  REQUIRE(report.search.has_value());
  const ReportRun& base = row_named(report, "base").runs.at(0);
  CHECK(base.trained_steps == 600);
  CHECK(base.trained_seconds == doctest::Approx(400.0));  // both invocations
  CHECK(base.threads == 2);
  CHECK(row_named(report, "deep").runs.at(0).threads == 0);
  // Spent: 400 + 150 + 300 s = 14m10s; of threads 800 + 300 + 300 = 23m20s. Paces (s a step, of
  // threads): base 0.667 (1.333), lr 0.75 (1.5), deep 1.5 (1.5); wide at their mean 0.972
  // (1.444): the full grid, 4 rows x 600 steps, 38m53s (57m47s of threads); 1400 / 3467 = 40 %.
  // Decoded at rung 0: base, lr, deep (the last rung's BLEU is base's own evaluation).
  const std::string cost =
      "search cost: 14m10s of training in 3 runs (23m20s of threads: each run's training time times its threads; 1 "
      "run(s) without a recorded thread count counted as one thread), 1000 steps; the full grid (4 rows x 600 steps), "
      "each row at its run's pace, would take 38m53s (57m47s of threads; 1 row(s) not timed yet at the others' mean "
      "pace): 40 % of it spent; besides, 3 decoding(s) of the dev set at the rungs before the last (not timed)";
  const std::string md = render_report(report, ReportFormat::kMarkdown);
  MESSAGE(md);
  CHECK(contains(md, "- " + cost + "\n"));
  CHECK(contains(render_report(report, ReportFormat::kTerminal), cost));
}

TEST_CASE("a report of several sources gives each source's search its own summary and cost") {
  TempDir a("report_search_cost_a"), b("report_search_cost_b");
  build_search(a, /*same=*/false);
  build_search(b, /*same=*/false);
  std::filesystem::remove(b.file("search.json"));  // b: a suite without a search
  const Report report = build_report({a.path().string(), b.path().string()});
  REQUIRE(report.sources.size() == 2);
  const std::string& label = report.sources[0].label;
  CHECK(report.sources[0].search.has_value());
  CHECK_FALSE(report.sources[1].search.has_value());
  const std::string md = render_report(report, ReportFormat::kMarkdown);
  MESSAGE(md);
  // Only the first source's runs count (b's rows have the same folder names under another folder).
  CHECK(contains(md, fmt::format("- {}: search: halving by dev_bleu (higher is better), eta 2, rungs 200, 600 steps", label)));
  CHECK(contains(md, fmt::format("- {}: search cost: 14m10s of training in 3 runs (23m20s of threads", label)));
  CHECK(count_of(md, "search cost:") == 1);
  CHECK(contains(md, fmt::format("| {}/lr | model.heads=lr | waiting at rung 0: dev_bleu 28 |", label)));
}

TEST_CASE("a report of searches by different metrics says what each metric is at a rung") {
  TempDir a("report_search_metric_a"), b("report_search_metric_b");
  build_search(a, /*same=*/false, SearchMetric::dev_bleu);
  build_search(b, /*same=*/false, SearchMetric::dev_ppl);
  const std::string both = render_report(build_report({a.path().string(), b.path().string()}), ReportFormat::kMarkdown);
  MESSAGE(both);
  CHECK(contains(both, "with its search's metric at that rung (dev_bleu: BLEU of the dev set decoded with the rung's "
                       "checkpoint; dev_ppl: the trainer's dev evaluation there, not a final evaluation)"));
  // One search, or two by the same metric: that metric alone.
  const std::string one = render_report(build_report(b.path().string()), ReportFormat::kMarkdown);
  CHECK(contains(one, "with its dev_ppl at that rung (the trainer's dev evaluation there, not a final evaluation)"));
  CHECK_FALSE(contains(one, "dev_bleu: BLEU"));
  const std::string same = render_report(build_report({b.path().string(), b.path().string()}), ReportFormat::kMarkdown);
  CHECK(contains(same, "with its dev_ppl at that rung ("));
}

}  // namespace attnlab::nmt
