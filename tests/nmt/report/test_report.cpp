// attnlab report: suite.json / result.json round trips, the paired bootstrap test, and every
// report format on a fake run folder (done, failed and pending rows, several seeds, paper values).
// A search's report: test_report_search.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/report/report.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "nmt_test_util.h"
#include "report_fixtures.h"

namespace attnlab::nmt {
namespace {

using namespace testing;  // nmt_test_util.h, report_fixtures.h

// 60 dev sentences; the "base" system drops the last two words of every sentence and replaces one,
// the "good" system is the reference itself.
std::vector<std::string> dev_reference() {
  const std::vector<std::string> nouns{"cat", "dog", "house", "river", "teacher", "car", "garden", "city"};
  const std::vector<std::string> verbs{"sees", "likes", "finds", "paints", "builds", "watches"};
  std::vector<std::string> out;
  for (int i = 0; i < 60; ++i)
    out.push_back(fmt::format("the {} {} the old {} near the {} today", nouns[i % 8], verbs[i % 6], nouns[(i * 3 + 1) % 8],
                              nouns[(i * 5 + 2) % 8]));
  return out;
}

std::vector<std::string> base_hypotheses(const std::vector<std::string>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs) {
    std::string h = r.substr(0, r.rfind(" near"));
    h.replace(0, 3, "a");
    out.push_back(h);
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::string metrics(double final_ppl) {
  std::string s = "{\"kind\":\"start\",\"step\":0,\"parameters\":65000000,\"resumed\":false}\n";
  for (int step = 10; step <= 200; step += 10) {
    s += fmt::format("{{\"kind\":\"train\",\"step\":{},\"loss\":{},\"lr\":0.001,\"tokens_per_second\":12000,\"elapsed\":{}}}\n",
                     step, 2.0 + 8.0 * std::exp(-step / 50.0), step * 0.5);
    if (step % 50 == 0)
      s += fmt::format("{{\"kind\":\"dev\",\"step\":{},\"dev_ppl\":{},\"dev_nll\":1,\"dev_smoothed_loss\":1}}\n", step,
                       final_ppl + 300.0 * std::exp(-step / 30.0));
  }
  return s + "{\"kind\":\"train\",\"step\":21";  // a torn last line (the trainer was killed)
}

// The fake run folder: base (2 seeds), A1 (2 seeds, perfect output), A2 (the base's output),
// B1 (failed), C1 (pending). Returns the run folder.
void build_fake_run(const TempDir& dir) {
  const auto refs = dev_reference();
  const auto base = base_hypotheses(refs);
  write_text(dir.file("dev.ref"), join_lines(refs));

  SuiteState state;
  state.name = "table3-mini";
  state.source = "experiments/table3-mini.toml";
  state.reference = "Vaswani et al. 2017, Table 3";
  const auto add = [&](const std::string& name, std::uint64_t seed, std::vector<std::pair<std::string, std::string>> settings,
                       std::optional<PaperReference> paper, RowStatus status) {
    SuiteRowState r = make_row_state(name, seed, std::move(settings));
    r.paper = paper;
    r.status = status;
    if (status == RowStatus::kFailed) r.error = "out of memory at step 12";
    state.rows.push_back(r);
    std::filesystem::create_directories(dir.path() / r.dir);
    write_text((dir.path() / r.dir / "config.toml").string(),
               fmt::format("[data]\ndev_target = \"{}\"\n", dir.file("dev.ref")));
    return (dir.path() / r.dir).string();
  };
  const PaperReference base_paper{4.92, 25.8, 65.0};
  const PaperReference a1_paper{5.29, 24.9, std::nullopt};
  for (std::uint64_t seed : {1, 2}) {
    const std::string d = add("base", seed, {}, base_paper, RowStatus::kDone);
    write_row_result(d + "/result.json", make_result("base", seed, seed == 1 ? 4.9 : 5.1, seed == 1 ? 25.0 : 26.0));
    write_text(d + "/metrics.jsonl", metrics(seed == 1 ? 4.9 : 5.1));
    write_text(d + "/dev.hyp", join_lines(base));
  }
  for (std::uint64_t seed : {1, 2}) {
    const std::string d = add("A1", seed, {{"model.heads", "1"}, {"model.d_k", "512"}}, a1_paper, RowStatus::kDone);
    write_row_result(d + "/result.json", make_result("A1", seed, seed == 1 ? 5.2 : 5.4, 30.0));
    write_text(d + "/metrics.jsonl", metrics(5.3));
    write_text(d + "/dev.hyp", join_lines(refs));
  }
  {
    const std::string d = add("A2", 1, {{"model.heads", "4"}}, std::nullopt, RowStatus::kDone);
    write_row_result(d + "/result.json", make_result("A2", 1, 5.0, 25.5));
    write_text(d + "/metrics.jsonl", metrics(5.0));
    write_text(d + "/dev.hyp", join_lines(base));
  }
  add("B1", 1, {{"model.d_k", "16"}}, PaperReference{5.16, 25.1, 58.0}, RowStatus::kFailed);
  add("C1", 1, {{"model.encoder_layers", "2"}, {"model.decoder_layers", "2"}}, std::nullopt, RowStatus::kPending);
  write_suite_state(dir.file("suite.json"), state);
}

}  // namespace

TEST_CASE("row result and suite state round trip through JSON") {
  TempDir dir("report_json");
  RowResult r = make_result("A1", 7, 5.25, 24.75);
  r.beam = 6;
  r.alpha = 0.8;
  write_row_result(dir.file("result.json"), r);
  const RowResult back = read_row_result(dir.file("result.json"));
  CHECK(back.row == "A1");
  CHECK(back.seed == 7);
  CHECK(back.steps == 200);
  CHECK(back.parameters == 65'000'000);
  CHECK(back.dev_ppl == 5.25);
  CHECK(back.dev_ppl_smoothed == doctest::Approx(7.875));
  CHECK(back.bleu == 24.75);
  CHECK(back.bleu_mode == "sacrebleu");
  CHECK(back.bleu_signature == r.bleu_signature);
  CHECK(back.beam == 6);
  CHECK(back.alpha == 0.8);
  CHECK(contains(testing::read_bytes(dir.file("result.json")), "\"tokens_per_second\": 12345.0"));

  SuiteState s;
  s.name = "t3";
  s.reference = "paper";
  SuiteRowState row;
  row.name = "A1";
  row.seed = 2;
  row.hash = "ab";
  row.dir = "A1-s2-ab";
  row.settings = {{"model.heads", "1"}};
  row.paper = PaperReference{5.29, std::nullopt, 65.0};
  row.status = RowStatus::kFailed;
  row.error = "boom";
  s.rows.push_back(row);
  write_suite_state(dir.file("suite.json"), s);
  SuiteState b = read_suite_state(dir.file("suite.json"));
  REQUIRE(b.rows.size() == 1);
  CHECK(b.name == "t3");
  CHECK(b.rows[0].settings == row.settings);
  REQUIRE(b.rows[0].paper.has_value());
  CHECK(b.rows[0].paper->ppl == 5.29);
  CHECK_FALSE(b.rows[0].paper->bleu.has_value());
  CHECK(b.rows[0].paper->params_m == 65.0);
  CHECK(b.rows[0].status == RowStatus::kFailed);
  CHECK(b.rows[0].error == "boom");
  REQUIRE(b.find("A1", 2) != nullptr);
  b.find("A1", 2)->status = RowStatus::kDone;
  CHECK(b.find("A1", 3) == nullptr);
  CHECK(contains(suite_state_to_json(b), "\"status\": \"done\""));
}

TEST_CASE("suite state reader is tolerant of missing keys and unknown statuses") {
  const SuiteState s = suite_state_from_json(
      R"({"name": "x", "rows": [{"name": "base"}, {"name": "A1", "seed": 3, "status": "running", "paper": null, "extra": 1}]})");
  REQUIRE(s.rows.size() == 2);
  CHECK(s.rows[0].status == RowStatus::kPending);
  CHECK(s.rows[0].dir == "base-s1-");
  CHECK(s.rows[1].seed == 3);
  CHECK(s.rows[1].status == RowStatus::kPending);
  CHECK_FALSE(s.rows[1].paper.has_value());
  CHECK(contains(testing::error_of([] { suite_state_from_json("{not json", "bad.json"); }), "bad.json"));
  const RowResult r = row_result_from_json(R"({"row": "base", "bleu": 25.5})");
  CHECK(r.bleu == 25.5);
  CHECK(r.beam == 4);
}

TEST_CASE("paired bootstrap gives a small p for a clearly better system and p 1 for identical systems") {
  const auto refs = dev_reference();
  const auto base = base_hypotheses(refs);
  const BleuConfig config = BleuConfig::sacrebleu();
  std::vector<BleuStats> base_stats, good_stats;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    base_stats.push_back(sentence_bleu_stats(base[i], {refs[i]}, config));
    good_stats.push_back(sentence_bleu_stats(refs[i], {refs[i]}, config));
  }
  const BootstrapResult better = paired_bootstrap(base_stats, good_stats, config, 1000, 7);
  CHECK(better.samples == 1000);
  CHECK(better.system_bleu == doctest::Approx(100.0));
  CHECK(better.base_bleu == doctest::Approx(corpus_bleu(base, {refs}, config).score));
  CHECK(better.p_value < 0.01);
  // The other way round the base never wins: p = 1.
  CHECK(paired_bootstrap(good_stats, base_stats, config, 1000, 7).p_value == 1.0);
  // Identical systems tie on every sample; ties count as "not better".
  CHECK(paired_bootstrap(base_stats, base_stats, config, 1000, 7).p_value == 1.0);
  // Reproducible for a seed.
  std::vector<BleuStats> mixed = base_stats;
  for (std::size_t i = 0; i < mixed.size(); i += 3) mixed[i] = good_stats[i];
  const double p1 = paired_bootstrap(base_stats, mixed, config, 200, 99).p_value;
  CHECK(p1 == paired_bootstrap(base_stats, mixed, config, 200, 99).p_value);
  CHECK(contains(testing::error_of([&] { paired_bootstrap(base_stats, {good_stats[0]}, config); }), "60"));
}

TEST_CASE("report reads done failed and pending rows with seed statistics") {
  TempDir dir("report_build");
  build_fake_run(dir);
  const Report report = build_report(dir.path().string());
  CHECK(report.name == "table3-mini");
  CHECK(report.base_row == "base");
  REQUIRE(report.rows.size() == 5);
  const ReportRow& base = row_named(report, "base");
  CHECK(base.is_base);
  CHECK(base.runs.size() == 2);
  CHECK(base.done == 2);
  CHECK(base.dev_ppl.mean == doctest::Approx(5.0));
  CHECK(base.dev_ppl.std == doctest::Approx(std::sqrt(0.02)));
  CHECK(base.bleu.mean == doctest::Approx(25.5));
  CHECK(base.bleu.std == doctest::Approx(std::sqrt(0.5)));
  CHECK(base.runs[0].train_loss.size() == 20);  // the torn last line is skipped
  CHECK(base.runs[0].dev_ppl.size() == 4);
  CHECK(base.runs[0].dev_reference == dir.file("dev.ref"));

  const ReportRow& a1 = row_named(report, "A1");
  REQUIRE(a1.delta_ppl.has_value());
  CHECK(*a1.delta_ppl == doctest::Approx(0.3));
  CHECK(*a1.delta_bleu == doctest::Approx(4.5));
  REQUIRE(a1.bootstrap.has_value());
  CHECK(a1.bootstrap->p_value < 0.01);
  CHECK(a1.bootstrap->system_bleu == doctest::Approx(100.0));

  const ReportRow& a2 = row_named(report, "A2");
  REQUIRE(a2.bootstrap.has_value());
  CHECK(a2.bootstrap->p_value == 1.0);

  const ReportRow& b1 = row_named(report, "B1");
  CHECK(b1.failed == 1);
  CHECK(b1.status_text() == "failed");
  CHECK_FALSE(b1.delta_ppl.has_value());
  CHECK_FALSE(b1.bootstrap.has_value());
  const ReportRow& c1 = row_named(report, "C1");
  CHECK(c1.pending == 1);
  CHECK(c1.status_text() == "pending");
  REQUIRE(report.bleu_kinds.size() == 1);
  CHECK(report.bleu_kinds[0].mode == "sacrebleu");
}

TEST_CASE("terminal and markdown reports show values deltas paper columns and statuses") {
  TempDir dir("report_text");
  build_fake_run(dir);
  const Report report = build_report(dir.path().string());
  const std::string term = render_report(report, ReportFormat::kTerminal);
  MESSAGE(term);
  CHECK(contains(term, "dev PPL"));
  CHECK(contains(term, "paper PPL"));
  CHECK(contains(term, "5.00 ± 0.14"));  // base dev PPL over 2 seeds
  CHECK(contains(term, "25.50 ± 0.71"));
  CHECK(contains(term, "+0.30"));        // A1 ΔPPL
  CHECK(contains(term, "+4.50"));        // A1 ΔBLEU
  CHECK(contains(term, "model.heads=1, model.d_k=512"));
  CHECK(contains(term, "65.0"));         // params (M)
  CHECK(contains(term, "1h02m"));        // 3725 s of training
  CHECK(contains(term, "12345"));
  CHECK(contains(term, "4.92"));         // paper PPL of base
  CHECK(contains(term, "25.8"));
  CHECK(contains(term, "failed"));
  CHECK(contains(term, "pending"));
  CHECK(contains(term, "B1 (seed 1) failed: out of memory at step 12"));
  CHECK(contains(term, "BLEU: sacrebleu mode, signature nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"));
  CHECK(contains(term, "Koehn 2004"));
  CHECK(contains(term, "0.000"));        // A1's p
  CHECK(contains(term, "1.000"));        // A2's p
  // Aligned: the status column starts at the same offset in the header and in every row.
  const auto line_of = [&](const std::string& prefix) {
    const auto at = term.find("\n" + prefix);
    REQUIRE(at != std::string::npos);
    return term.substr(at + 1, term.find('\n', at + 1) - at - 1);
  };
  const std::size_t column = line_of("row ").find("status");
  CHECK(line_of("A1 ").find("done") == column);
  CHECK(line_of("B1 ").find("failed") == column);
  CHECK(line_of("C1 ").find("pending") == column);

  const std::string md = render_report(report, ReportFormat::kMarkdown);
  CHECK(contains(md, "| row | settings | status |"));
  CHECK(contains(md, "| ---: |"));
  CHECK(contains(md, "| A1 | model.heads=1, model.d_k=512 | done | 2 |"));
  CHECK(contains(md, "| 5.00 ± 0.14 |"));
  CHECK(contains(md, "| +0.30 |"));
  CHECK(contains(md, "| B1 | model.d_k=16 | failed |"));
  CHECK(contains(md, "| C1 |"));
  CHECK(contains(md, "nrefs:1\\|case:mixed"));  // pipes escaped in the note
  CHECK(count_of(md, "\n| ") == 7);           // header, separator, 5 rows
}

TEST_CASE("csv report has one line per row with raw numbers") {
  TempDir dir("report_csv");
  build_fake_run(dir);
  const std::string csv = render_report(build_report(dir.path().string()), ReportFormat::kCsv);
  CHECK(count_of(csv, "\n") == 6);
  CHECK(csv.rfind("row,status,seeds,seeds_done,settings,params_m,", 0) == 0);
  CHECK(contains(csv, "\nbase,done,2,2,,65.000,200,3725.0,12345.0,5.0000,0.1414,,25.5000,0.7071,,,4.92,25.80,65.0,,,,,,,,sacrebleu,"));
  CHECK(contains(csv, "\nA1,done,2,2,\"model.heads=1, model.d_k=512\",65.000,200,3725.0,12345.0,5.3000,0.1414,0.3000,30.0000,0.0000,4.5000,0.0000,5.29,24.90,,"));
  CHECK(contains(csv, "\nA2,done,1,1,model.heads=4,"));
  CHECK(contains(csv, ",1.0000,,,,,,,,,,1.0000,sacrebleu"));
  CHECK(contains(csv, "\nB1,failed,1,0,model.d_k=16,,,,,,,,,,,,5.16,25.10,58.0,0.24,-0.70,,,,,,,,out of memory at step 12,,,,\n"));
  CHECK(contains(csv, "\nC1,pending,1,0,"));
}

TEST_CASE("report sets each effect beside the paper's with its direction and the noise") {
  TempDir dir("report_effects");
  build_fake_run(dir);
  const Report report = build_report(dir.path().string());
  // The seed noise floor: twice the base's standard deviation over its two seeds.
  REQUIRE(report.ppl_noise.has_value());
  CHECK(*report.ppl_noise == doctest::Approx(2.0 * std::sqrt(0.02)));
  CHECK(*report.bleu_noise == doctest::Approx(2.0 * std::sqrt(0.5)));
  // A1: the paper's PPL rises 0.37 and BLEU falls 0.9; ours: PPL +0.30 (beyond 0.28), BLEU +4.5
  // with p < 0.01: the PPL effect agrees, the BLEU effect goes against the paper, both beyond the noise.
  const ReportRow& a1 = row_named(report, "A1");
  CHECK(*a1.ppl_effect.paper_delta == doctest::Approx(0.37));
  CHECK(*a1.bleu_effect.paper_delta == doctest::Approx(-0.9));
  CHECK(a1.ppl_effect.verdict() == "agrees*");
  CHECK(a1.bleu_effect.verdict() == "differs*");
  CHECK(a1.bootstrap->p_worse == 1.0);  // never worse than the base on a resample
  // A2 has no paper values, B1 no result of ours: neither is compared.
  CHECK(row_named(report, "A2").ppl_effect.verdict().empty());
  const ReportRow& b1 = row_named(report, "B1");
  CHECK(*b1.ppl_effect.paper_delta == doctest::Approx(0.24));
  CHECK_FALSE(b1.ppl_effect.agrees.has_value());
  CHECK(report.ppl_agreement.summary("dev PPL") == "dev PPL: direction agrees on 1 of 1 rows (1 significant)");
  CHECK(report.bleu_agreement.summary("BLEU") ==
        "BLEU: direction agrees on 0 of 1 rows (0 significant); against the paper beyond the noise: A1");
  // Every format answers the question.
  for (ReportFormat f : {ReportFormat::kTerminal, ReportFormat::kMarkdown, ReportFormat::kLatex, ReportFormat::kHtml}) {
    const std::string text = render_report(report, f);
    CHECK(contains(text, "direction agrees on 1 of 1 rows (1 significant)"));
    CHECK(contains(text, "agrees*"));
    CHECK(contains(text, "differs*"));
  }
  const std::string term = render_report(report, ReportFormat::kTerminal);
  CHECK(contains(term, "paper ΔPPL"));
  CHECK(contains(term, "+0.37"));
  CHECK(contains(term, "-0.9"));
  const std::string html = render_report(report, ReportFormat::kHtml);
  CHECK(contains(html, "<p class=\"agreement\"><strong>BLEU: direction agrees on 0 of 1 rows"));
  CHECK(contains(html, "<td class=\"differs strong\">differs*</td>"));
  const std::string csv = render_report(report, ReportFormat::kCsv);
  CHECK(contains(csv, ",paper_delta_ppl,paper_delta_bleu,ppl_direction,ppl_outside_noise,bleu_direction,"));
  CHECK(contains(csv, ",5.29,24.90,,0.37,-0.90,agrees,yes,differs,yes,1.0000,sacrebleu,"));
}

TEST_CASE("an effect within the noise is not significant, and one seed of base gives no PPL noise floor") {
  TempDir dir("report_noise");
  build_fake_run(dir);
  SuiteState s = read_suite_state(dir.file("suite.json"));
  // Base seed 2 not finished: pending, no result.json.
  for (auto& r : s.rows)
    if (r.name == "base" && r.seed == 2) r.status = RowStatus::kPending, std::filesystem::remove(dir.path() / r.dir / "result.json");
  write_suite_state(dir.file("suite.json"), s);
  const Report one_seed = build_report(dir.path().string());
  CHECK_FALSE(one_seed.ppl_noise.has_value());
  const ReportRow& a1 = row_named(one_seed, "A1");
  CHECK(a1.ppl_effect.verdict() == "agrees");     // no noise floor: never called significant
  CHECK(a1.bleu_effect.verdict() == "differs*");  // the bootstrap alone decides
  CHECK(contains(render_report(one_seed, ReportFormat::kTerminal), "unknown (one base seed)"));

  // Two base seeds far apart: A1's +0.3 PPL lies within twice their spread.
  SuiteState wide = read_suite_state(dir.file("suite.json"));
  for (auto& r : wide.rows)
    if (r.name == "base") r.status = RowStatus::kDone;
  write_suite_state(dir.file("suite.json"), wide);
  for (const auto& r : wide.rows)
    if (r.name == "base" && r.seed == 2)
      write_row_result((dir.path() / r.dir / "result.json").string(), make_result("base", 2, 6.0, 26.0));
  const Report noisy = build_report(dir.path().string());
  const ReportRow& n1 = row_named(noisy, "A1");
  CHECK(*n1.delta_ppl < 0.0);  // base mean 5.45 now: A1's 5.3 is lower, against the paper's +0.37
  CHECK(n1.ppl_effect.verdict() == "differs");
  CHECK(noisy.ppl_agreement.summary("dev PPL") == "dev PPL: direction agrees on 0 of 1 rows (0 significant)");
}

TEST_CASE("a train folder reports as one row with its curves and the evaluations attnlab eval recorded") {
  TempDir dir("report_train_run");
  const std::string run = dir.file("m30k");
  std::filesystem::create_directories(run);
  write_text(run + "/config.toml", "[experiment]\nname = \"m30k\"\nseed = 3\n[training]\nmax_steps = 400\n");
  write_text(run + "/metrics.jsonl", metrics(6.0));  // trained to step 200 of 400 so far
  const auto pending = build_report(run);
  REQUIRE(pending.rows.size() == 1);
  CHECK(pending.rows[0].name == "m30k");
  CHECK(pending.rows[0].status_text() == "pending");
  CHECK(pending.rows[0].runs[0].train_loss.size() == 20);

  write_text(run + "/config.toml", "[experiment]\nname = \"m30k\"\nseed = 3\n[training]\nmax_steps = 200\n");
  EvalRecord test{.set = "test", .reference = "test_2016.de", .checkpoint = run + "/checkpoints/average-last-5.safetensors",
                  .step = 200, .averaged = 5, .ppl = 4.25, .tokens = 900, .bleu = 41.5, .bleu_mode = "tokenized",
                  .bleu_signature = "nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.6.0", .sacrebleu = 39.0,
                  .beam = 5, .alpha = 0.6};
  CHECK(write_eval_record(run, test, "ein hund .\n") == run + "/eval/test.json");
  CHECK(testing::read_bytes(run + "/eval/test.hyp") == "ein hund .\n");
  EvalRecord dev = test;
  dev.set = "dev", dev.ppl = 4.5, dev.bleu = 40.25;
  write_eval_record(run, dev, "");
  const auto back = read_eval_records(run);
  REQUIRE(back.size() == 2);
  CHECK(back.at("test").bleu == 41.5);
  CHECK(back.at("test").averaged == 5);
  CHECK(back.at("dev").ppl == 4.5);

  const Report report = build_report(run);
  const ReportRow& row = report.rows.at(0);
  CHECK(row.status_text() == "done");
  CHECK(row.is_base);
  CHECK(row.runs[0].seed == 3);
  CHECK(row.steps.mean == 200.0);
  CHECK(row.params.mean == 65'000'000.0);
  CHECK(row.dev_ppl.mean == 4.5);  // the recorded dev evaluation, not the last training-time figure
  CHECK(row.bleu.mean == 40.25);
  CHECK(row.test_bleu.mean == 41.5);
  CHECK(row.test_ppl.mean == 4.25);
  const std::string term = render_report(report, ReportFormat::kTerminal);
  CHECK(contains(term, "test BLEU"));
  CHECK(contains(term, "41.50"));
  CHECK(contains(term, "the average of the last 5 checkpoints"));
  CHECK(contains(term, "tokenized mode"));
  const std::string csv = render_report(report, ReportFormat::kCsv);
  CHECK(contains(csv, ",error,search_state,rung,rung_steps,rung_metric,test_ppl,test_bleu\n"));
  CHECK(contains(csv, ",4.2500,41.5000\n"));
  CHECK(count_of(render_report(report, ReportFormat::kHtml), "<polyline class=\"curve\"") == 2);

  // Without a dev evaluation the BLEU column stays empty (not 0) and the dev PPL is training's last.
  std::filesystem::remove(run + "/eval/dev.json");
  const Report no_dev = build_report(run);
  CHECK(no_dev.rows[0].bleu.n == 0);
  CHECK(no_dev.rows[0].dev_ppl.mean == doctest::Approx(6.0 + 300.0 * std::exp(-200 / 30.0)));
  // A damaged record is a warning naming it; the report is still made.
  write_text(run + "/eval/dev.json", "{\"set\": \"dev\", \"ppl\": ");
  const Report damaged = build_report(run);
  REQUIRE(damaged.warnings.size() == 1);
  CHECK(contains(damaged.warnings[0], "eval/dev.json"));
}

TEST_CASE("latex report is a booktabs tabular") {
  TempDir dir("report_latex");
  build_fake_run(dir);
  const std::string tex = render_report(build_report(dir.path().string()), ReportFormat::kLatex);
  CHECK(contains(tex, "\\begin{tabular}{lllrrrrrrrrrrrrrrrll}"));
  CHECK(contains(tex, "\\toprule"));
  CHECK(contains(tex, "\\midrule"));
  CHECK(contains(tex, "\\bottomrule"));
  CHECK(contains(tex, "\\end{tabular}"));
  CHECK(contains(tex, "5.00 $\\pm$ 0.14"));
  CHECK(contains(tex, "$\\Delta$PPL"));
  CHECK(contains(tex, "model.d\\_k=512"));  // underscores escaped
  CHECK(contains(tex, "nrefs:1\\textbar{}case:mixed"));
  CHECK(contains(tex, "B1 & model.d\\_k=16 & failed & 1 & -- &"));
  CHECK(count_of(tex, " \\\\\n") == 6);
}

TEST_CASE("html report is self-contained with the table and svg learning curves") {
  TempDir dir("report_html");
  build_fake_run(dir);
  const std::string html = render_report(build_report(dir.path().string()), ReportFormat::kHtml);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(contains(html, "<table>"));
  CHECK(contains(html, "<td class=\"num\">5.00 ± 0.14</td>"));
  CHECK(contains(html, "<td class=\"failed\">failed</td>"));
  CHECK(contains(html, "<td class=\"pending\">pending</td>"));
  CHECK(contains(html, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"));
  CHECK(count_of(html, "<svg ") == 2);
  // 5 runs with curves (base x2, A1 x2, A2), in both charts.
  CHECK(count_of(html, "<polyline class=\"curve\"") == 10);
  CHECK(contains(html, "data-row=\"A1\""));
  CHECK(contains(html, "Training loss"));
  CHECK(contains(html, "Dev perplexity"));
  CHECK(contains(html, "(log scale)"));  // dev PPL spans more than 10x
  CHECK(contains(html, ">step</text>"));
  // Legend: one entry per row with curves.
  CHECK(count_of(html, "stroke-width=\"3\"/><text") == 6);
  // No external resources.
  CHECK_FALSE(contains(html, "src="));
  CHECK_FALSE(contains(html, "href="));
  CHECK_FALSE(contains(html, "http://www.w3.org/1999"));
  CHECK(count_of(html, "http") == count_of(html, "xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST_CASE("dev reference is found through config.toml for files and for the synthetic corpus") {
  TempDir dir("report_ref");
  std::filesystem::create_directories(dir.path() / "row");
  write_text(dir.file("row/config.toml"), "[data]\ncache_dir = \"cache\"\n[data.synthetic]\ntrain_pairs = 100\ndev_pairs = 10\ntest_pairs = 5\nseed = 3\n");
  CHECK(find_dev_reference(dir.file("row")).empty());  // not written yet
  std::filesystem::create_directories(dir.path() / "row/cache/synthetic-3-100-10-5");
  write_text(dir.file("row/cache/synthetic-3-100-10-5/dev.tgt"), "x\n");
  CHECK(find_dev_reference(dir.file("row")) == dir.file("row/cache/synthetic-3-100-10-5/dev.tgt"));
  write_text(dir.file("row/config.toml"), fmt::format("[data]\ndev_target = \"{}\"\n", dir.file("ref.txt")));
  write_text(dir.file("ref.txt"), "y\n");
  CHECK(find_dev_reference(dir.file("row")) == dir.file("ref.txt"));
  CHECK(find_dev_reference(dir.file("missing")).empty());
}

TEST_CASE("report without a base result keeps rows and explains the missing test") {
  TempDir dir("report_nobase");
  build_fake_run(dir);
  SuiteState s = read_suite_state(dir.file("suite.json"));
  // The base row not finished: pending, no result.json.
  for (auto& r : s.rows)
    if (r.name == "base") r.status = RowStatus::kPending, std::filesystem::remove(dir.path() / r.dir / "result.json");
  write_suite_state(dir.file("suite.json"), s);
  const Report report = build_report(dir.path().string());
  const ReportRow& a1 = row_named(report, "A1");
  CHECK_FALSE(a1.delta_ppl.has_value());
  CHECK_FALSE(a1.bootstrap.has_value());
  CHECK(contains(render_report(report, ReportFormat::kTerminal), "A1: no bootstrap test: base row: the base row has no result"));
  CHECK(parse_report_format("md") == ReportFormat::kMarkdown);
  CHECK(contains(testing::error_of([] { parse_report_format("pdf"); }), "unknown report format 'pdf'"));
}

TEST_CASE("a row finished by another process counts as done whatever suite.json said") {
  TempDir dir("report_done_elsewhere");
  build_fake_run(dir);
  // suite.json as a submitter wrote it before the rows ran: everything pending or failed.
  SuiteState s = read_suite_state(dir.file("suite.json"));
  for (auto& r : s.rows) r.status = r.name == "A1" ? RowStatus::kFailed : RowStatus::kPending;
  write_suite_state(dir.file("suite.json"), s);
  const Report report = build_report(dir.path().string());
  const ReportRow& a1 = row_named(report, "A1");
  CHECK(a1.delta_ppl.has_value());
  CHECK(a1.failed == 0);
  CHECK(a1.pending == 0);
}

}  // namespace attnlab::nmt
