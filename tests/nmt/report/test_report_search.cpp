// attnlab report on a fake search (search.json: rows finished, promoted, waiting, stopped and
// failed): each run's standing in every format, the CSV's rung columns and the HTML's stop marks.
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
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

// metrics.jsonl of a run that trained 25 steps per entry of `dev` (its dev perplexity there).
std::string search_curve(const std::vector<double>& dev) {
  std::string s = "{\"kind\":\"start\",\"step\":0,\"parameters\":1000,\"resumed\":false}\n";
  for (std::size_t i = 0; i < dev.size(); ++i) {
    const std::size_t step = 25 * (i + 1);
    s += fmt::format("{{\"kind\":\"train\",\"step\":{},\"loss\":{},\"lr\":0.001,\"elapsed\":{}}}\n", step, dev[i] / 2,
                     static_cast<double>(step) * 0.5);
    s += fmt::format("{{\"kind\":\"dev\",\"step\":{},\"dev_ppl\":{},\"dev_nll\":1,\"dev_smoothed_loss\":1}}\n", step, dev[i]);
  }
  return s;
}

// A search by dev_ppl with eta 2 at rungs 50, 100 and 200 steps, as search.json would stand after
// these results (each curve's dev perplexity at a rung is its metric there):
//   base@1   5.5, 5.0, 4.9  finished (result.json)
//   wide@1   9.1            stopped at rung 0 (rung 0 is closed: late failed, all others measured)
//   deep@1   6.0            stopped at rung 0
//   narrow@1 5.8, 5.6       promoted at rung 0 (the best 3 of 6); waiting at rung 1 (tall@1 may reach it)
//   tall@1   5.2            promoted to rung 1, training towards it; tall@2 7.0: stopped at rung 0
//   late@1   -              failed before rung 0 in a Slurm task (suite.json still says pending)
void build_fake_search(const TempDir& dir) {
  SuiteState suite;
  suite.name = "search-mini";
  suite.source = "experiments/search-mini.toml";
  SearchState search;
  search.metric = SearchMetric::dev_ppl;
  search.eta = 2;
  search.rungs = {50, 100, 200};
  const auto add = [&](const std::string& name, std::uint64_t seed, std::vector<std::pair<std::string, std::string>> settings,
                       std::vector<double> dev, std::vector<std::optional<double>> rung_metrics, std::int64_t allowed) {
    SuiteRowState r = make_row_state(name, seed, std::move(settings));
    suite.rows.push_back(r);
    std::filesystem::create_directories(dir.path() / r.dir);
    if (!dev.empty()) write_text((dir.path() / r.dir / "metrics.jsonl").string(), search_curve(dev));
    search.rows.push_back({fmt::format("{}@{}", name, seed), r.dir, std::move(rung_metrics), allowed, false, "", false});
    return (dir.path() / r.dir).string();
  };
  const std::string base = add("base", 1, {}, {11, 5.5, 5.2, 5.0, 4.95, 4.93, 4.91, 4.9}, {5.5, 5.0, 4.9}, 2);
  write_row_result(base + "/result.json", make_result("base", 1, 4.9, 20.0));
  suite.rows.back().status = RowStatus::kDone;
  add("wide", 1, {{"model.d_ff", "128"}}, {20, 9.1}, {9.1}, 0);
  add("deep", 1, {{"model.encoder_layers", "2"}}, {15, 6.0}, {6.0}, 0);
  add("narrow", 1, {{"model.d_ff", "16"}}, {14, 5.8, 5.7, 5.6}, {5.8, 5.6}, 1);
  add("tall", 1, {{"model.heads", "2"}}, {12, 5.2, 5.1}, {5.2}, 1);
  add("tall", 2, {{"model.heads", "2"}}, {18, 7.0}, {7.0}, 0);
  add("late", 1, {{"model.heads", "8"}}, {}, {}, 0);
  search.rows.back().failed = true;
  search.rows.back().error = "out of memory at step 30";
  write_suite_state(dir.file("suite.json"), suite);
  write_text(dir.file("search.json"), search_state_to_json(search));
}

}  // namespace

TEST_CASE("a search's runs show their standing, the rung and their metric there in every format") {
  TempDir dir("report_search");
  build_fake_search(dir);
  const Report report = build_report(dir.path().string());
  REQUIRE(report.search.has_value());
  REQUIRE(report.rows.size() == 6);
  CHECK(row_named(report, "base").status_text() == "done");
  CHECK(row_named(report, "wide").status_text() == "stopped at rung 0: dev_ppl 9.1");
  CHECK(row_named(report, "deep").status_text() == "stopped at rung 0: dev_ppl 6");
  CHECK(row_named(report, "narrow").status_text() == "waiting at rung 1: dev_ppl 5.6");
  CHECK(row_named(report, "tall").status_text() ==
        "seed 1: promoted to rung 1 (100 steps); seed 2: stopped at rung 0: dev_ppl 7");
  // The failure the search recorded counts, with its error, though suite.json says pending.
  const ReportRow& late = row_named(report, "late");
  CHECK(late.failed == 1);
  CHECK(late.status_text() == "failed before rung 0 (50 steps)");
  const ReportRun& wide = row_named(report, "wide").runs.at(0);
  REQUIRE(wide.search.has_value());
  CHECK(wide.search->standing == SearchStanding::stopped);
  CHECK(wide.search->rung == 0);
  CHECK(wide.search->rung_steps == 50);
  CHECK(wide.search->metric == 9.1);
  const ReportRun& tall1 = row_named(report, "tall").runs.at(0);
  CHECK(tall1.search->standing == SearchStanding::promoted);
  CHECK_FALSE(tall1.search->metric.has_value());  // not measured at rung 1 yet

  const std::string summary =
      "search: halving by dev_ppl (lower is better), eta 2, rungs 50, 100, 200 steps; 500 of the full grid's 1400 "
      "steps trained (36 %; 7 rows x 200); best so far: base@1, dev_ppl 4.9 at rung 2 (200 steps)";
  const std::string md = render_report(report, ReportFormat::kMarkdown);
  MESSAGE(md);
  CHECK(contains(md, "| base | (base) | done | 1 |"));
  CHECK(contains(md, "| wide | model.d_ff=128 | stopped at rung 0: dev_ppl 9.1 | 1 |"));
  CHECK(contains(md, "| narrow | model.d_ff=16 | waiting at rung 1: dev_ppl 5.6 | 1 |"));
  CHECK(contains(md, "| tall | model.heads=2 | seed 1: promoted to rung 1 (100 steps); seed 2: stopped at rung 0: dev_ppl 7 | 2 |"));
  CHECK(contains(md, "| late | model.heads=8 | failed before rung 0 (50 steps) | 1 |"));
  CHECK(contains(md, "- " + summary + "\n"));
  CHECK(contains(md, "late (seed 1) failed: out of memory at step 30"));
  const std::string term = render_report(report, ReportFormat::kTerminal);
  CHECK(contains(term, summary));
  CHECK(contains(term, "stopped at rung 0: dev_ppl 9.1"));
  CHECK(contains(render_report(report, ReportFormat::kLatex), "stopped at rung 0: dev\\_ppl 9.1"));

  const std::string csv = render_report(report, ReportFormat::kCsv);
  CHECK(contains(csv, ",bleu_mode,bleu_signature,error,search_state,rung,rung_steps,rung_metric\n"));
  CHECK(contains(csv, ",finished,2,200,4.9000\n"));
  CHECK(contains(csv, "\nwide,stopped at rung 0: dev_ppl 9.1,1,0,model.d_ff=128,"));
  CHECK(contains(csv, ",,stopped,0,50,9.1000\n"));
  CHECK(contains(csv, ",,waiting,1,100,5.6000\n"));
  CHECK(contains(csv, ",,promoted;stopped,1;0,100;50,;7.0000\n"));
  CHECK(contains(csv, ",out of memory at step 30,failed,0,50,\n"));

  // The chart of dev perplexity marks each stopped run with a cross at its rung's point, the
  // waiting run with a ring, and both charts draw the rungs.
  const std::string html = render_report(report, ReportFormat::kHtml);
  CHECK(count_of(html, "<path class=\"stop\" data-row=") == 3);  // wide, deep, tall@2
  CHECK(count_of(html, "<circle class=\"wait\" data-row=\"narrow\"") == 1);
  CHECK(count_of(html, "<line class=\"guide\"") == 6);
  CHECK(contains(html, ">rung 2</text>"));
  CHECK(contains(html, ">stopped by search</text>"));
  CHECK(contains(html, ">waiting at a rung</text>"));
  CHECK(contains(html, ">search rungs</text>"));
  CHECK(contains(html, "a cross marks where the search stopped a run (ranked out by dev_ppl at that rung)"));
  CHECK(contains(html, "<td class=\"held\">stopped at rung 0: dev_ppl 9.1</td>"));
  // wide's cross is centred on the last point of its dev curve (step 50).
  const std::size_t chart = html.find("Dev perplexity");
  const std::size_t curve = html.find("data-row=\"wide\"", chart);
  REQUIRE(curve != std::string::npos);
  const std::size_t points = html.find("points=\"", curve) + 8;
  const std::string pts = html.substr(points, html.find('"', points) - points);
  const std::string last = pts.substr(pts.rfind(' ') + 1);
  const double x = std::stod(last.substr(0, last.find(','))), y = std::stod(last.substr(last.find(',') + 1));
  CHECK(contains(html, fmt::format("<path class=\"stop\" data-row=\"wide\" d=\"M{:.1f},{:.1f} ", x - 5, y - 5)));
}

TEST_CASE("a report without search.json has empty search columns and no marks") {
  TempDir dir("report_no_search");
  build_fake_search(dir);
  std::filesystem::remove(dir.file("search.json"));
  const Report report = build_report(dir.path().string());
  CHECK_FALSE(report.search.has_value());
  CHECK(row_named(report, "wide").status_text() == "pending");
  CHECK(row_named(report, "late").status_text() == "pending");
  CHECK(contains(render_report(report, ReportFormat::kCsv), "\nwide,pending,1,0,model.d_ff=128,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"));
  const std::string html = render_report(report, ReportFormat::kHtml);
  CHECK_FALSE(contains(html, "class=\"stop\""));
  CHECK_FALSE(contains(html, "class=\"guide\""));
  CHECK_FALSE(contains(render_report(report, ReportFormat::kMarkdown), "search:"));
}

}  // namespace attnlab::nmt
