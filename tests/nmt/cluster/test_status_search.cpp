// `attnlab status` of a suite under a search: each row's standing from search.json beside its
// folder's state (held, running to its rung, failed in the search), and the search's summary line.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

#include <fmt/core.h>

#include "attnlab/nmt/cluster/status.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/search_state.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "nmt_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;
namespace fs = std::filesystem;

namespace {

// A train entry and a dev evaluation every 10 steps up to `last`, 0.5 s per step.
std::string curve(int last) {
  std::string s = "{\"kind\":\"start\",\"step\":0,\"parameters\":10}\n";
  for (int step = 10; step <= last; step += 10)
    s += fmt::format("{{\"kind\":\"train\",\"step\":{},\"elapsed\":{},\"loss\":3.0}}\n"
                     "{{\"kind\":\"dev\",\"step\":{},\"dev_ppl\":{}}}\n",
                     step, step * 0.5, step, 100.0 / step);
  return s;
}

}  // namespace

TEST_CASE("status shows each row's standing in the suite's search and the search's course") {
  testing::TempDir dir("status_search");
  // Rungs 20, 40, 80 (eta 2): base finished; wide stopped at rung 0; narrow waiting at rung 1
  // (tall may still reach it); tall promoted to rung 1 and training (this test holds its lock);
  // late failed in a Slurm task (suite.json still says pending).
  SuiteState suite;
  suite.name = "grid";
  SearchState search;
  search.eta = 2;
  search.rungs = {20, 40, 80};
  std::map<std::string, std::string> dirs;
  const auto add = [&](const std::string& name, int trained, std::vector<std::optional<double>> metrics,
                       std::int64_t allowed) {
    SuiteRowState r;
    r.name = name;
    r.dir = name + "-s1-0123456789abcdef";
    suite.rows.push_back(r);
    dirs[name] = (dir.path() / r.dir).string();
    fs::create_directories(dirs[name]);
    if (trained > 0) testing::write_text(dirs[name] + "/metrics.jsonl", curve(trained));
    search.rows.push_back({name + "@1", r.dir, std::move(metrics), allowed, false, "", false});
  };
  add("base", 80, {3.0, 1.5, 0.6}, 2);
  add("wide", 20, {5.0}, 0);
  add("narrow", 40, {4.0, 1.7}, 1);
  add("tall", 30, {3.5}, 1);
  add("late", 10, {}, 0);
  search.rows.back().failed = true;
  search.rows.back().error = "out of memory\nat step 12";
  RowResult done;
  done.steps = 80;
  done.dev_ppl = 0.6;
  write_row_result(dirs["base"] + "/result.json", done);
  write_suite_state(dir.file("suite.json"), suite);
  testing::write_text(dir.file("search.json"), search_state_to_json(search));
  testing::write_text(dirs["wide"] + "/run.log", "held at rung 0 by the search\n");
  const FolderLock lock = FolderLock::acquire(dirs["tall"], "run folder");

  const StatusReport report = read_status(dir.path().string());
  std::map<std::string, RowProgress> rows;
  for (const auto& r : report.rows) rows[r.name] = r;
  CHECK(rows["base"].phase == RowPhase::kDone);
  CHECK(rows["base"].search == "finished");
  CHECK(rows["wide"].phase == RowPhase::kHeld);
  CHECK(rows["wide"].search == "stopped at rung 0: dev_ppl 5");
  CHECK(rows["wide"].log_tail.empty());  // held by the rule: nothing went wrong
  CHECK(rows["narrow"].phase == RowPhase::kHeld);
  CHECK(rows["narrow"].search == "waiting at rung 1: dev_ppl 1.7");
  CHECK(rows["tall"].phase == RowPhase::kRunning);
  CHECK(rows["tall"].search == "running to rung 1 (40 steps)");
  REQUIRE(rows["tall"].eta_seconds.has_value());
  CHECK(*rows["tall"].eta_seconds == doctest::Approx(5.0));  // 10 steps to its rung at 0.5 s
  CHECK(rows["late"].phase == RowPhase::kFailed);
  CHECK(rows["late"].error == "out of memory");
  CHECK(rows["late"].search == "failed before rung 0 (20 steps)");

  const std::string text = format_status(report);
  MESSAGE(text);
  CHECK(text.find("5 row(s): 1 done, 1 running, 1 failed, 2 held") != std::string::npos);
  CHECK(text.find("\nsearch: halving by dev_ppl (lower is better), eta 2, rungs 20, 40, 80 steps; 160 of the full "
                  "grid's 400 steps trained (40 %; 5 rows x 80); best so far: base@1, dev_ppl 0.6 at rung 2 "
                  "(80 steps)\n") != std::string::npos);
  const auto line_of = [&](const std::string& name) {
    const auto at = text.find("\n" + name + " ");
    REQUIRE(at != std::string::npos);
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  // The search column starts at the same place in the header and in every row.
  const std::size_t column = line_of("row").find("search");
  CHECK(line_of("wide").find("stopped at rung 0: dev_ppl 5") == column);
  CHECK(line_of("tall").find("running to rung 1 (40 steps)") == column);
  CHECK(line_of("tall").find("pid ") != std::string::npos);
  CHECK(line_of("wide").find("held ") != std::string::npos);
  CHECK(text.find("    error: out of memory\n") != std::string::npos);

  // Without search.json the table is the usual one.
  fs::remove(dir.file("search.json"));
  const std::string plain = format_status(read_status(dir.path().string()));
  CHECK(plain.find("\nsearch: ") == std::string::npos);
  CHECK(plain.find("  search  ") == std::string::npos);
  CHECK(plain.find("stopped at rung") == std::string::npos);
  CHECK(plain.find("3 stopped") != std::string::npos);
}
