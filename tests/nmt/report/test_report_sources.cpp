// attnlab report over several sources: two suite folders and a train run in one table, rows named
// by their source, labels that tell folders of one name apart, the chosen base row (and the errors
// of a wrong one), the paired bootstrap between rows scored on the same dev sentences and not
// between others, and the sources named under the table.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/error.h"
#include "attnlab/nmt/report/report.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "nmt_test_util.h"
#include "report_fixtures.h"

namespace attnlab::nmt {
namespace {

using namespace testing;  // nmt_test_util.h, report_fixtures.h

// 40 dev sentences of one of two sets (`set` 0 or 1: other sentences).
std::vector<std::string> sentences(int set) {
  const std::vector<std::string> nouns{"cat", "dog", "house", "river", "teacher", "car", "garden", "city"};
  std::vector<std::string> out;
  for (int i = 0; i < 40; ++i)
    out.push_back(fmt::format("{} {} sees the {} by the {} again", set ? "one" : "the", nouns[i % 8],
                              nouns[(i * 3 + set + 1) % 8], nouns[(i * 5 + 2) % 8]));
  return out;
}

// A system that drops each sentence's last two words.
std::vector<std::string> clipped(const std::vector<std::string>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs) out.push_back(r.substr(0, r.rfind(" by")));
  return out;
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

struct FakeRow {
  std::string name;
  std::vector<std::string> hyps;
  double ppl, bleu;
};

// A finished suite `name` in `dir`, its rows scored against `reference`.
void write_suite(const std::filesystem::path& dir, const std::string& name, const std::string& reference,
                 const std::vector<FakeRow>& rows) {
  SuiteState state;
  state.name = name;
  state.source = "experiments/" + name + ".toml";
  for (const FakeRow& row : rows) {
    SuiteRowState r = make_row_state(row.name, 1, row.name == "base" ? decltype(r.settings){}
                                                                      : decltype(r.settings){{"model.x", row.name}});
    r.status = RowStatus::kDone;
    state.rows.push_back(r);
    const std::filesystem::path d = dir / r.dir;
    std::filesystem::create_directories(d);
    write_text((d / "config.toml").string(), fmt::format("[data]\ndev_target = \"{}\"\n", reference));
    write_row_result((d / "result.json").string(), make_result(row.name, 1, row.ppl, row.bleu));
    write_text((d / "dev.hyp").string(), lines(row.hyps));
  }
  write_suite_state((dir / "suite.json").string(), state);
}

// runs/positions and runs/norms on one dev set, other/positions on another, and a train run.
struct Sources {
  TempDir dir{"report_sources"};
  std::string positions, norms, other, train;
  Sources() {
    const auto refs = sentences(0), refs1 = sentences(1);
    write_text(dir.file("dev.ref"), lines(refs));
    write_text(dir.file("other.ref"), lines(refs1));
    positions = dir.file("runs/positions");
    norms = dir.file("runs/norms");
    other = dir.file("other/positions");
    write_suite(positions, "positions", dir.file("dev.ref"),
                {{"base", clipped(refs), 5.0, 25.0}, {"alibi", clipped(refs), 4.9, 25.0}});
    write_suite(norms, "norms", dir.file("dev.ref"), {{"base", clipped(refs), 5.1, 24.0}, {"rms", refs, 4.5, 30.0}});
    write_suite(other, "positions", dir.file("other.ref"), {{"base", refs1, 4.0, 40.0}});
    // A train run, unfinished (no dev evaluation recorded, 200 of 400 steps).
    train = dir.file("m30k");
    std::filesystem::create_directories(train);
    write_text(train + "/config.toml", "[experiment]\nname = \"m30k\"\n[training]\nmax_steps = 400\n");
  }
};

std::vector<std::string> names(const Report& r) {
  std::vector<std::string> out;
  for (const ReportRow& row : r.rows) out.push_back(row.name);
  return out;
}

}  // namespace

TEST_CASE("report over several sources names each row by its source and compares with one base row") {
  const Sources s;
  const Report r = build_report(std::vector<std::string>{s.positions, s.norms});
  CHECK(names(r) == std::vector<std::string>{"positions/base", "positions/alibi", "norms/base", "norms/rms"});
  CHECK(r.name == "positions + norms");
  REQUIRE(r.sources.size() == 2);
  CHECK(r.sources[1].label == "norms");
  CHECK(r.sources[1].name == "norms");
  CHECK(r.sources[1].file == "experiments/norms.toml");
  // The first row named base is the base; every other row's change is against it.
  CHECK(r.base_row == "positions/base");
  CHECK(row_named(r, "positions/base").is_base);
  CHECK_FALSE(row_named(r, "norms/base").is_base);
  CHECK(*row_named(r, "norms/base").delta_bleu == doctest::Approx(-1.0));
  CHECK(*row_named(r, "norms/rms").delta_ppl == doctest::Approx(-0.5));
  // The bootstrap pairs the other suite's rows too (the same dev sentences): a perfect system is
  // reliably better, the same output ties.
  REQUIRE(row_named(r, "norms/rms").bootstrap.has_value());
  CHECK(row_named(r, "norms/rms").bootstrap->p_value < 0.01);
  REQUIRE(row_named(r, "norms/base").bootstrap.has_value());
  CHECK(row_named(r, "norms/base").bootstrap->p_value == 1.0);

  // Markdown: the rows by their names, the sources under the table.
  const std::string md = render_report(r, ReportFormat::kMarkdown);
  CHECK(md.find("## positions + norms") != std::string::npos);
  CHECK(md.find("| norms/rms |") != std::string::npos);
  CHECK(md.find("- norms: ") != std::string::npos);
  CHECK(md.find(", suite norms (experiments/norms.toml)") != std::string::npos);
  CHECK(md.find("the base row's (positions/base)") != std::string::npos);
  const std::string csv = render_report(r, ReportFormat::kCsv);
  CHECK(csv.find("norms/rms,") != std::string::npos);
}

TEST_CASE("report --base chooses the base row by its whole name or by a name one source alone has") {
  const Sources s;
  const std::vector<std::string> both{s.positions, s.norms};
  ReportOptions o;
  o.base = "norms/base";
  const Report by_name = build_report(both, o);
  CHECK(by_name.base_row == "norms/base");
  CHECK(*row_named(by_name, "positions/base").delta_bleu == doctest::Approx(1.0));
  o.base = "rms";
  CHECK(build_report(both, o).base_row == "norms/rms");
  // One source: the row's own name.
  o.base = "alibi";
  CHECK(build_report(s.positions, o).base_row == "alibi");
  // Ambiguous, unknown (with a suggestion): errors that list the rows.
  o.base = "base";
  CHECK_THROWS_WITH_AS(build_report(both, o),
                       doctest::Contains("--base base: 2 sources have a row base; name one as SOURCE/ROW"), Error);
  o.base = "norms/rsm";
  CHECK_THROWS_WITH_AS(build_report(both, o), doctest::Contains("no such row; did you mean 'norms/rms'? (rows: "
                                                                "positions/base, positions/alibi, norms/base, norms/rms)"),
                       Error);
}

TEST_CASE("report labels folders of one name by their parents, and pairs only rows of one dev set") {
  const Sources s;
  const Report r = build_report(std::vector<std::string>{s.positions, s.other, s.train});
  CHECK(names(r) == std::vector<std::string>{"runs/positions/base", "runs/positions/alibi", "other/positions/base",
                                             "m30k/m30k"});
  const ReportRow& other = row_named(r, "other/positions/base");
  CHECK(other.delta_bleu.has_value());
  CHECK_FALSE(other.bootstrap.has_value());
  CHECK(other.bootstrap_note == "scored on another dev set than the base row");
  // The train run is there, unfinished.
  CHECK(row_named(r, "m30k/m30k").status_text() == "pending");
  // The same folder twice: numbered.
  const Report twice = build_report(std::vector<std::string>{s.norms, s.norms});
  CHECK(names(twice)[0] == "norms#1/base");
  CHECK(names(twice)[2] == "norms#2/base");
}

}  // namespace attnlab::nmt
