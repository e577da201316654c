// Successive halving over a suite's rows (attnlab/nmt/suite/search.h, search_state.h): the rungs,
// the promotion rule against rankings worked out by hand (ties, rows arriving late, a row that
// fails, a rung that closes), the decisions across a save and a reload, and the [search] table's
// errors with file:line:column.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "attnlab/error.h"
#include "attnlab/nmt/suite/search.h"
#include "attnlab/nmt/suite/search_state.h"
#include "attnlab/nmt/suite/suite.h"

using namespace attnlab;
using namespace attnlab::nmt;
namespace fs = std::filesystem;

namespace {

using Keys = std::vector<std::string>;
using Rows = std::vector<std::size_t>;

SearchState state_of(std::vector<std::string> keys, std::vector<std::int64_t> rungs, std::int64_t eta = 3,
                     SearchMetric metric = SearchMetric::dev_ppl) {
  SearchState s;
  s.metric = metric;
  s.eta = eta;
  s.rungs = std::move(rungs);
  for (auto& k : keys) s.rows.push_back({k, k + "-dir", {}, 0, false, "", false});
  return s;
}

std::string standing(const SearchState& s, const std::string& key) {
  return std::string(search_standing_name(s.standing(key, false)));
}

doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

}  // namespace

TEST_CASE("search rungs grow by eta from the first rung and end at max_steps") {
  CHECK(search_rungs({.eta = 3, .first_rung = 20, .max_steps = 540}) == std::vector<std::int64_t>{20, 60, 180, 540});
  CHECK(search_rungs({.eta = 3, .first_rung = 100, .max_steps = 1000}) == std::vector<std::int64_t>{100, 300, 900, 1000});
  CHECK(search_rungs({.eta = 2, .first_rung = 250, .max_steps = 1000}) == std::vector<std::int64_t>{250, 500, 1000});
  CHECK(search_rungs({.eta = 4, .first_rung = 999, .max_steps = 1000}) == std::vector<std::int64_t>{999, 1000});
  CHECK_THROWS_AS(search_rungs({.eta = 3, .first_rung = 0, .max_steps = 10}), Error);
  CHECK_THROWS_AS(search_rungs({.eta = 1, .first_rung = 5, .max_steps = 10}), Error);
}

TEST_CASE("the halving rule promotes the best floor(n / eta) rows, ties to the earlier row") {
  // Nine rows at a rung, perplexities by hand: ranks 4 (3.0), 7 (3.1), 1 and 2 tied (3.5), ...
  const std::vector<RungEntry> nine = {{0, 5.0, false}, {1, 3.5, false}, {2, 3.5, false},
                                       {3, 9.0, false}, {4, 3.0, false}, {5, 4.0, false},
                                       {6, 6.0, false}, {7, 3.1, false}, {8, 7.0, false}};
  CHECK(promotions_at_rung(nine, 3, false, false) == Rows{1, 4, 7});  // 4, 7, then 1 before 2 (suite order)
  CHECK(promotions_at_rung(nine, 4, false, false) == Rows{4, 7});
  // BLEU: the highest go on.
  CHECK(promotions_at_rung(nine, 3, true, false) == Rows{3, 6, 8});
  // Already promoted rows are not promoted again; the others of the best three are.
  std::vector<RungEntry> some = nine;
  some[4].promoted = true;
  CHECK(promotions_at_rung(some, 3, false, false) == Rows{1, 7});
  // A row promoted while few had arrived stays promoted and does not take a place from the best.
  some = nine;
  some[8].promoted = true;
  CHECK(promotions_at_rung(some, 3, false, false) == Rows{1, 4, 7});
  // Fewer rows than eta: nobody goes on while the rung is open; the best once it is closed.
  const std::vector<RungEntry> two = {{0, 4.0, false}, {1, 3.0, false}};
  CHECK(promotions_at_rung(two, 3, false, false).empty());
  CHECK(promotions_at_rung(two, 3, false, true) == Rows{1});
  // Rows without a metric (failed, or not a number) are neither ranked nor counted.
  const std::vector<RungEntry> failed = {{0, std::nullopt, false}, {1, 4.0, false}, {2, 5.0, false}, {3, 6.0, false}};
  CHECK(promotions_at_rung(failed, 3, false, false) == Rows{1});
  const std::vector<RungEntry> none = {{0, std::nullopt, false}};
  CHECK(promotions_at_rung(none, 3, false, true).empty());
}

TEST_CASE("asynchronous halving: rows arriving late, a failed row and rungs that close") {
  SearchState s = state_of({"a", "b", "c", "d", "e", "f"}, {10, 30, 90});
  CHECK(standing(s, "a") == "pending");
  CHECK(s.record("a", 0, 5.0).empty());  // 1 row at rung 0: floor(1/3) = 0
  CHECK(standing(s, "a") == "waiting");
  CHECK(s.record("b", 0, 4.0).empty());
  CHECK(s.record("c", 0, 6.0) == Keys{"b"});  // 3 rows: the best, b
  CHECK(standing(s, "b") == "promoted");
  CHECK(s.standing_rung("b", false) == 1);
  CHECK(s.record("d", 0, 3.0) == Keys{"d"});  // 4 rows: d is now the best; b stays promoted
  CHECK_FALSE(s.rung_closed(0));
  CHECK(s.record_failure("e", "diverged").empty());
  CHECK(standing(s, "e") == "failed");
  CHECK(standing(s, "a") == "waiting");  // f may still arrive
  // f arrives last: 5 rows measured, floor(5/3) = 1 (d, promoted already); the rung closes.
  CHECK(s.record("f", 0, 4.5).empty());
  CHECK(s.rung_closed(0));
  CHECK(standing(s, "a") == "stopped");
  CHECK(standing(s, "c") == "stopped");
  CHECK(standing(s, "f") == "stopped");
  // Rung 1 holds b and d only: open until both are measured, then the better one goes on.
  CHECK(s.record("b", 1, 3.6).empty());
  CHECK_FALSE(s.rung_closed(1));
  CHECK(standing(s, "b") == "waiting");
  CHECK(s.record("d", 1, 2.9) == Keys{"d"});
  CHECK(standing(s, "b") == "stopped");
  CHECK(s.record("d", 2, 2.5).empty());  // the last rung: d has finished
  CHECK(standing(s, "d") == "finished");
  CHECK(s.steps_trained() == 10 * 3 + 30 + 90);  // each row's steps: a, c, f 10; b 30; d 90
  // A repeated record (a process stopped after writing it) changes nothing.
  CHECK(s.record("a", 0, 1.0).empty());
  CHECK(*s.find("a")->metrics[0] == 5.0);
  CHECK_THROWS_WITH_AS(s.record("c", 2, 1.0), contains("reports rung 2 but was measured only up to rung 0"), Error);
  // A stopped row asked to finish (--no-prune) is not held any more, even before it has finished.
  CHECK(s.find("c")->held());
  s.find("c")->no_prune = true;
  CHECK_FALSE(s.find("c")->held());
  CHECK(standing(s, "c") == "promoted");
  CHECK(s.standing_rung("c", false) == 2);
}

TEST_CASE("a rung above closes when the last row below it stays there") {
  // b and d wait at rung 1 (2 < eta) while c has not reached rung 0; c's result closes rung 0,
  // which closes rung 1: its best row goes on.
  SearchState s = state_of({"a", "b", "c", "d"}, {10, 30, 90}, 2);
  CHECK(s.record("a", 0, 5.0).empty());
  CHECK(s.record("b", 0, 4.0) == Keys{"b"});  // 2 rows, eta 2: the better one
  CHECK(s.record("b", 1, 3.0).empty());        // 1 row at rung 1, which c may still reach
  CHECK(s.record("d", 0, 3.5) == Keys{"d"});   // 3 rows: floor(3/2) = 1: d is now the best
  CHECK(s.record("d", 1, 3.2) == Keys{"b"});   // rung 1: 2 rows, the better, b
  CHECK(standing(s, "d") == "waiting");        // c may still reach rung 0 and then rung 1
  CHECK(s.record("c", 0, 9.0).empty());        // rung 0 closes: 4 rows, floor(4/2) = 2 went on (b, d)
  CHECK(s.rung_closed(0));
  CHECK(s.rung_closed(1));
  CHECK(standing(s, "d") == "stopped");
  CHECK(standing(s, "c") == "stopped");

  // A failure may close a rung too: x waits at rung 0 behind y, which fails.
  SearchState f = state_of({"x", "y"}, {10, 30});
  CHECK(f.record("x", 0, 4.0).empty());
  CHECK(f.record_failure("y", "out of memory") == Keys{"x"});
}

TEST_CASE("the search in words: each standing with its rung and metric, and the course so far") {
  SearchState s = state_of({"a", "b", "c", "d", "e"}, {10, 30, 90});
  const auto words = [&](const std::string& key, bool finished = false) { return search_standing_text(s, key, finished); };
  CHECK(words("a") == "pending, to rung 0 (10 steps)");
  CHECK(search_summary(s) ==
        "halving by dev_ppl (lower is better), eta 3, rungs 10, 30, 90 steps; 0 of the full grid's 450 steps "
        "trained (0 %; 5 rows x 90); no row measured yet");
  s.record("a", 0, 5.0);
  s.record("b", 0, 4.0);
  s.record("c", 0, 6.0);  // b promoted
  CHECK(words("a") == "waiting at rung 0: dev_ppl 5");
  CHECK(words("b") == "promoted to rung 1 (30 steps)");
  s.record_failure("d", "diverged");
  s.record("e", 0, std::nullopt);  // not a number: ranks nowhere
  CHECK(words("a") == "stopped at rung 0: dev_ppl 5");
  CHECK(words("e") == "stopped at rung 0: no dev_ppl");
  CHECK(words("d") == "failed before rung 0 (10 steps)");
  s.record("b", 1, 3.25);  // rung 1 closed: b goes on
  CHECK(words("b") == "promoted to rung 2 (90 steps)");
  CHECK(words("b", true) == "finished");
  s.find("c")->no_prune = true;
  CHECK(words("c") == "to the end with --no-prune (90 steps)");
  CHECK(words("c", true) == "finished with --no-prune");
  CHECK(search_metric_text(SearchMetric::dev_bleu, 27.125) == "dev_bleu 27.12");
  // The best so far is the best at the highest rung reached, not the best number anywhere.
  std::int64_t rung = -1;
  REQUIRE(s.best_so_far(rung) != nullptr);
  CHECK(s.best_so_far(rung)->key == "b");
  CHECK(rung == 1);
  CHECK(search_summary(s) ==
        "halving by dev_ppl (lower is better), eta 3, rungs 10, 30, 90 steps; 60 of the full grid's 450 steps "
        "trained (13 %; 5 rows x 90); best so far: b, dev_ppl 3.25 at rung 1 (30 steps)");
  SearchState bleu = state_of({"x", "y"}, {10, 30}, 2, SearchMetric::dev_bleu);
  bleu.record("x", 0, 20.0);
  bleu.record("y", 0, 25.0);
  REQUIRE(bleu.best_so_far(rung) != nullptr);
  CHECK(bleu.best_so_far(rung)->key == "y");  // BLEU: the higher
}

TEST_CASE("search decisions are the same after a save and a reload at any point") {
  // One sequence of results, recorded in one state, and again with a JSON round trip after each.
  const std::vector<std::tuple<std::string, std::int64_t, double>> results = {
      {"r0", 0, 5.0}, {"r1", 0, 4.0}, {"r2", 0, 6.0}, {"r1", 1, 3.9}, {"r3", 0, 3.0}, {"r4", 0, 3.5},
      {"r5", 0, 4.4}, {"r3", 1, 2.8}, {"r4", 1, 3.3}, {"r3", 2, 2.0}};
  SearchState straight = state_of({"r0", "r1", "r2", "r3", "r4", "r5"}, {10, 30, 90});
  SearchState reloaded = straight;
  for (const auto& [key, rung, value] : results) {
    const Keys a = straight.record(key, rung, value);
    reloaded = search_state_from_json(search_state_to_json(reloaded), "search.json");
    const Keys b = reloaded.record(key, rung, value);
    CHECK(a == b);
  }
  CHECK(search_state_to_json(straight) == search_state_to_json(reloaded));
  for (const auto& r : straight.rows) CHECK(standing(straight, r.key) == standing(reloaded, r.key));
  CHECK(standing(straight, "r3") == "finished");
  CHECK_THROWS_WITH_AS(search_state_from_json("{\"method\": 1}", "x/search.json"),
                       contains("x/search.json: method: expected a string, got number"), Error);
}

TEST_CASE("a damaged search.json is refused naming the file and the field, never read out of range") {
  SearchState s = state_of({"a", "b"}, {10, 30, 90});
  s.record("a", 0, 4.0);
  s.record("b", 0, 5.0);  // a promoted: allowed 1
  const std::string good = search_state_to_json(s);
  CHECK(search_state_to_json(search_state_from_json(good, "search.json")) == good);
  // Each damage: what is replaced in the good text, by what, and the message.
  const std::vector<std::tuple<std::string, std::string, std::string>> damages = {
      {"\"allowed\": 1", "\"allowed\": -7", "s/search.json: rows[0].allowed: -7 is out of range (0 .. 1)"},
      {"\"allowed\": 1", "\"allowed\": 2", "s/search.json: rows[0].allowed: 2 is out of range (0 .. 1)"},
      {"\"allowed\": 1", "\"allowed\": 1.5", "s/search.json: rows[0].allowed: expected a whole number, got 1.5"},
      {"\"metrics\": [\n        4.0\n      ]", "\"metrics\": [4.0, 3.0, 2.0, 1.0]",
       "s/search.json: rows[0].metrics: 4 values for a search of 3 rungs"},
      {"\"metrics\": [\n        4.0\n      ]", "\"metrics\": [-4.0]",
       "s/search.json: rows[0].metrics[0]: dev_ppl -4.0 is out of range (> 0)"},
      {"\"metrics\": [\n        4.0\n      ]", "\"metrics\": [\"4\"]",
       "s/search.json: rows[0].metrics[0]: expected a number or null, got string"},
      {"\"method\": \"halving\"", "\"method\": \"hyperband\"",
       "s/search.json: method: unknown search method 'hyperband' (valid: halving)"},
      {"\"metric\": \"dev_ppl\"", "\"metric\": \"dev_loss\"",
       "s/search.json: metric: unknown search metric 'dev_loss' (valid: dev_ppl, dev_bleu)"},
      {"\"eta\": 3", "\"eta\": 1", "s/search.json: eta: 1 is out of range (2 .. 1048576)"},
      {"\"eta\": 3", "\"etta\": 3", "s/search.json: etta: unknown field"},
      {"\"key\": \"b\"", "\"key\": \"a\"", "s/search.json: rows[1].key: 'a' is there twice"},
      {"\"rungs\": [\n    10,\n    30,\n    90\n  ]", "\"rungs\": [10, 90, 30]",
       "s/search.json: rungs[2]: 30 is out of range (91 .. "},
      {"\"rungs\": [\n    10,\n    30,\n    90\n  ]", "\"rungs\": []",
       "s/search.json: rungs: expected a non-empty array of step counts"},
      {"\"failed\": false", "\"failed\": 0", "s/search.json: rows[0].failed: expected true or false, got number"},
      {"{", "[", "s/search.json: not valid JSON"},
  };
  for (const auto& damage : damages) {
    const auto& [from, to, message] = damage;
    INFO(std::get<1>(damage));
    std::string text = good;
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    CHECK_THROWS_WITH_AS(search_state_from_json(text, "s/search.json"), contains(message), Error);
  }
}

TEST_CASE("rows finished with --no-prune enter no ranking above the rung where the rule held them") {
  // Worked by hand. Rungs 10, 30, 90 steps; eta 2; dev perplexity, lower is better; four rows.
  //   rung 0: a 1.0, b 2.0, c 3.0, d 4.0. All four measured: the rung is closed, floor(4 / 2) = 2
  //           go on: a and b (allowed 1); c and d are stopped at rung 0 for good.
  //   rung 1: a 1.5, b 2.5. Nobody else can arrive (c and d are stopped below it): closed,
  //           floor(2 / 2) = 1 goes on: a (allowed 2); b is stopped at rung 1 for good.
  // Then c and d are finished with --no-prune, reporting 5.0 and 6.0 at rung 1 (and numbers at
  // rung 2). Ranked at rung 1, they would make four entries there, floor(4 / 2) = 2 best, a and b:
  // b would be promoted after status called it stopped for good. The rule never let c and d reach
  // rung 1: their numbers there rank nowhere, and b stays stopped.
  SearchState s = state_of({"a", "b", "c", "d"}, {10, 30, 90});
  s.eta = 2;
  CHECK(s.record("a", 0, 1.0).empty());
  CHECK(s.record("b", 0, 2.0) == Keys{"a"});
  CHECK(s.record("c", 0, 3.0).empty());
  CHECK(s.record("d", 0, 4.0) == Keys{"b"});
  CHECK(s.record("a", 1, 1.5).empty());
  CHECK(s.record("b", 1, 2.5) == Keys{"a"});
  CHECK(search_standing_text(s, "b", false) == "stopped at rung 1: dev_ppl 2.5");
  CHECK(search_standing_text(s, "c", false) == "stopped at rung 0: dev_ppl 3");
  for (const auto& [key, at1, at2] : {std::tuple{"c", 5.0, 4.5}, std::tuple{"d", 6.0, 5.5}}) {
    s.find(key)->no_prune = true;
    CHECK(s.record(key, 1, at1).empty());
    CHECK(s.record(key, 2, at2).empty());
  }
  CHECK(s.find("b")->allowed == 1);
  CHECK(search_standing_text(s, "b", false) == "stopped at rung 1: dev_ppl 2.5");
  CHECK(s.record("a", 2, 1.2).empty());
  CHECK(standing(s, "a") == "finished");
}

namespace {

struct Files {
  fs::path dir = fs::temp_directory_path() / ("attnlab-search-test-" + std::to_string(::getpid()));
  Files() { fs::create_directories(dir); }
  ~Files() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

// A synthetic-corpus suite with a [search] table and rows of its own.
std::string suite_with(const std::string& search, const std::string& rows = "") {
  return R"([suite]
name = "s"

[base.data.synthetic]
train_pairs = 100

[base.vocab]
size = 300

[base.training]
max_steps = 540
eval_every = 20

)" + search + "\n" + rows;
}

}  // namespace

TEST_CASE("a suite's [search] is read, applied to its rows and checked with file:line:column") {
  const Files files;
  const std::string grid = "[grids.g]\naxes = [ { \"training.lr_scale\" = [0.5, 1.0, 2.0] } ]\n";
  const Suite s = load_suite(files.write(
      "ok.toml", suite_with("[search]\nmethod = \"halving\"\nmetric = \"dev_bleu\"\neta = 3\nfirst_rung = 20\n", grid)));
  REQUIRE(s.search.has_value());
  CHECK(s.search->metric == SearchMetric::dev_bleu);
  CHECK(s.search->max_steps == 540);  // the rows' own
  CHECK(search_rungs(*s.search) == std::vector<std::int64_t>{20, 60, 180, 540});
  CHECK(s.rows.size() == 4);
  // max_steps in [search] sets every row's (and with it the rows' folders).
  const Suite longer = load_suite(files.write("longer.toml", suite_with("[search]\nfirst_rung = 20\nmax_steps = 600\n", grid)));
  for (const auto& row : longer.rows) CHECK(row.config.training.max_steps == 600);
  CHECK(longer.rows[0].hash != s.rows[0].hash);

  CHECK_THROWS_WITH_AS(load_suite(files.write("m.toml", suite_with("[search]\nmethod = \"hyperband\"\nfirst_rung = 20\n"))),
                       contains("m.toml:15:10: search.method: unknown search method 'hyperband' (valid: halving)"),
                       Error);
  CHECK_THROWS_WITH_AS(load_suite(files.write("metric.toml", suite_with("[search]\nmetric = \"dev_loss\"\nfirst_rung = 20\n"))),
                       contains("metric.toml:15:10: search.metric: unknown search metric 'dev_loss' (valid: dev_ppl, dev_bleu)"), Error);
  CHECK_THROWS_WITH_AS(load_suite(files.write("eta.toml", suite_with("[search]\neta = 1\nfirst_rung = 20\n"))),
                       contains("eta.toml:15:7: search.eta: eta must be an integer >= 2"), Error);
  CHECK_THROWS_WITH_AS(load_suite(files.write("past.toml", suite_with("[search]\nfirst_rung = 600\n"))),
                       contains("past.toml:15:14: search.first_rung: 600 steps is not below max_steps (540)"), Error);
  CHECK_THROWS_WITH_AS(load_suite(files.write("odd.toml", suite_with("[search]\nfirst_rung = 30\n"))),
                       contains("odd.toml:15:14: search.first_rung: 30 is not a multiple of training.eval_every (20"),
                       Error);
  CHECK_THROWS_WITH_AS(load_suite(files.write("key.toml", suite_with("[search]\nfirst_rung = 20\nrungs = 3\n"))),
                       contains("key.toml:16:1: search.rungs: unknown key"), Error);
  CHECK_THROWS_WITH_AS(load_suite(files.write("nodev.toml", suite_with("[search]\nfirst_rung = 20\n",
                                                                       "[rows.nodev]\n\"data.synthetic.dev_pairs\" = 0\n"))),
                       contains("nodev.toml:14:1: search: row nodev has no dev set"), Error);
  CHECK_THROWS_WITH_AS(load_suite(files.write("steps.toml", suite_with("[search]\nfirst_rung = 20\n",
                                                                       "[rows.long]\n\"training.max_steps\" = 900\n"))),
                       contains("row long trains 900 steps, but the search's rows all train to 540"), Error);
}

TEST_CASE("the shipped search suites are 27-row grids with the rungs they document") {
  const std::string dir = ATTNLAB_TEST_EXPERIMENTS_DIR;
  for (const std::string file : {"search-quickstart.toml", "search-multi30k.toml"}) {
    const std::vector<std::int64_t> rungs{200, 600, 1620};
    CAPTURE(file);
    const Suite s = load_suite(dir + "/" + file);
    REQUIRE(s.search.has_value());
    CHECK(search_rungs(*s.search) == rungs);
    const SearchState state = make_search_state(s);
    CHECK(state.rows.size() == 27);  // the base row and 26 other grid points: the 27th is the base
  }
}

TEST_CASE("the Multi30k recipe search prunes no dropout row; its companion trains dropout 0.35 and 0.4 to the end") {
  const std::string dir = ATTNLAB_TEST_EXPERIMENTS_DIR;
  const Suite s = load_suite(dir + "/search-multi30k-recipe.toml");
  REQUIRE(s.search.has_value());
  CHECK(s.search->metric == SearchMetric::dev_bleu);
  CHECK(search_rungs(*s.search) == std::vector<std::int64_t>{1200, 3600, 10000});
  CHECK(s.rows.size() == 28);
  CHECK(make_search_state(s).rows.size() == 27);  // the grid's ls 0.1 / wd 0.1 point is the base row's run
  const ExperimentConfig& recipe = s.rows.front().config;
  for (const SuiteRow& row : s.rows) {
    CAPTURE(row.name);
    // The residual dropout's curves cross late (the suite file says why): it is the companion's.
    CHECK(row.config.model.dropout.residual == recipe.model.dropout.residual);
    CHECK(row.config.model.dropout.embedding == recipe.model.dropout.embedding);
    CHECK(row.config.training.warmup_steps <= s.search->first_rung);
    CHECK(row.config.training.keep_checkpoints == 20);  // the 10 ending at step 9000 stay
  }
  const Suite d = load_suite(dir + "/search-multi30k-dropout.toml");
  CHECK_FALSE(d.search.has_value());
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0].config.model.dropout.residual == doctest::Approx(0.35));
  CHECK(d.rows[1].config.model.dropout.residual == doctest::Approx(0.4));
  for (const SuiteRow& row : d.rows) {
    CAPTURE(row.name);
    CHECK(row.config.training.max_steps == recipe.training.max_steps);
    CHECK(row.config.training.keep_checkpoints == 20);
  }
}
