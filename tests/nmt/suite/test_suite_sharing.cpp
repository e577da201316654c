// Rows that are the same run, and rows a plugin cannot serve (suite.h, row_policy.h).
#include <doctest/doctest.h>

#include <filesystem>

#include "attnlab/error.h"
#include "attnlab/nmt/suite/row_policy.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "nmt_test_util.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;
namespace fs = std::filesystem;

namespace {

Suite load(const std::string& unsupported, const std::string& body) {
  const nmt::testing::TempDir dir("sharing");
  const std::string file = dir.file("grid.toml");
  nmt::testing::write_text(file, "[suite]\nname = \"grid\"\n" + unsupported + "\n" + nmt::testing::kTinySuiteBase +
                                     "[base.training]\nmax_steps = 20\n" + body);
  return load_suite(file);
}

const SuiteRow& row(const Suite& s, const std::string& name) {
  for (const SuiteRow& r : s.rows)
    if (r.name == name) return r;
  FAIL("no row " << name);
  throw Error("unreachable");
}

// The message of the Error that f throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const char* kAttentionGrid = R"([grids.pos]
axes = [ { "model.attention.name" = ["scaled_dot", "additive"] }, { "model.positional.name" = ["sinusoidal", "rope"] } ]
)";

}  // namespace

TEST_CASE("rows whose resolved configuration and seed are equal are one run, in the first row's folder") {
  const Suite s = load("", std::string(kAttentionGrid) + R"(
[rows.same-ffn]
"model.d_ff" = 64
[rows.wider]
"model.d_ff" = 96
[rows.beam]
"eval.beam" = 2
)");
  const SuiteRow& base = row(s, "base");
  CHECK(base.same_as.empty());
  // The grid point that sets the base's own values, and a row that sets the base's d_ff.
  CHECK(row(s, "pos-01").same_as == "base");
  CHECK(row(s, "pos-01").config.run_dir == base.config.run_dir);
  CHECK(row(s, "same-ffn").same_as == "base");
  CHECK(row(s, "same-ffn").config.run_dir == base.config.run_dir);
  // A changed row is its own run: another model, or the same model evaluated otherwise.
  for (const char* own : {"wider", "beam", "pos-02", "pos-03", "pos-04"}) {
    CAPTURE(own);
    CHECK(row(s, own).same_as.empty());
    CHECK(row(s, own).config.run_dir != base.config.run_dir);
  }
  // suite.json records both rows, with the shared folder and what they share.
  SuiteState state = make_suite_state(s);
  const SuiteRowState* entry = state.find("pos-01", 1);
  REQUIRE(entry != nullptr);
  CHECK(entry->same_as == "base");
  CHECK(entry->dir == fs::path(base.config.run_dir).filename().string());
  const SuiteState back = suite_state_from_json(suite_state_to_json(state));
  CHECK(back.rows[1].same_as == state.rows[1].same_as);
}

TEST_CASE("another seed of the same configuration is another run") {
  const Suite s = load("seeds = [1, 2]", std::string(kAttentionGrid));
  CHECK(row(s, "base").seed == 1);
  int shared = 0;
  for (const SuiteRow& r : s.rows)
    if (!r.same_as.empty()) {
      ++shared;
      CHECK(r.name == "pos-01");
      // pos-01 seed k is base seed k.
      for (const SuiteRow& b : s.rows)
        if (b.name == "base" && b.seed == r.seed) CHECK(r.config.run_dir == b.config.run_dir);
    }
  CHECK(shared == 2);
}

TEST_CASE("unsupported = error refuses the suite, naming the row; skip lists the row with the reason") {
  const Registry& registry = nmt::testing::plugins();
  Suite refused = load("", kAttentionGrid);
  CHECK(refused.rows.back().unsupported == UnsupportedRows::error);
  const std::string refusal = error_of([&] { apply_unsupported(refused, registry); });
  CAPTURE(refusal);
  CHECK(nmt::testing::contains(refusal, "row pos-04: "));
  CHECK(nmt::testing::contains(refusal, "does not support position rotation"));
  CHECK(nmt::testing::contains(refusal, "unsupported = \"fallback\" or \"skip\""));

  Suite skipping = load("unsupported = \"skip\"", kAttentionGrid);
  apply_unsupported(skipping, registry);
  CHECK(row(skipping, "pos-04").skipped.find("positional plugin 'rope'") != std::string::npos);
  for (const char* served : {"base", "pos-01", "pos-02", "pos-03"}) CHECK(row(skipping, served).skipped.empty());
  SuiteState state = make_suite_state(skipping);
  const SuiteRowState* entry = state.find("pos-04", 1);
  REQUIRE(entry != nullptr);
  CHECK(entry->status == RowStatus::kSkipped);
  CHECK(entry->error == row(skipping, "pos-04").skipped);
  CHECK(parse_row_status(row_status_name(RowStatus::kSkipped)) == RowStatus::kSkipped);
}

TEST_CASE("unsupported = fallback gives scaled_dot to the rows that need it, and no run folder moves") {
  const Registry& registry = nmt::testing::plugins();
  Suite s = load("unsupported = \"fallback\"", kAttentionGrid);
  const Suite as_read = s;
  apply_unsupported(s, registry);
  CHECK(row(s, "pos-04").config.model.attention.fallback == "scaled_dot");
  CHECK(row(s, "pos-03").config.model.attention.fallback.empty());  // additive serves sinusoidal
  for (std::size_t i = 0; i < s.rows.size(); ++i) CHECK(s.rows[i].config.run_dir == as_read.rows[i].config.run_dir);
}

TEST_CASE("a grid's unsupported setting is checked where it is written") {
  const std::string grid = error_of([] {
    load("", R"([grids.pos]
unsupported = "ignore"
axes = [ { "model.heads" = [2, 4] } ]
)");
  });
  CAPTURE(grid);
  CHECK(nmt::testing::contains(grid, "grid.toml:17:"));
  CHECK(nmt::testing::contains(grid, "grids.pos.unsupported"));
  CHECK(nmt::testing::contains(grid, "unknown unsupported policy 'ignore' (valid: error, fallback, skip)"));
  const std::string suite = error_of([] { load("unsupported = \"never\"", ""); });
  CAPTURE(suite);
  CHECK(nmt::testing::contains(suite, "grid.toml:3:"));
  CHECK(nmt::testing::contains(suite, "suite.unsupported"));
  // The grid's own setting wins over the suite's.
  const Suite s = load("unsupported = \"skip\"", R"([grids.pos]
unsupported = "fallback"
axes = [ { "model.heads" = [2, 4] } ]
)");
  CHECK(row(s, "base").unsupported == UnsupportedRows::skip);
  CHECK(row(s, "pos-01").unsupported == UnsupportedRows::fallback);
}
