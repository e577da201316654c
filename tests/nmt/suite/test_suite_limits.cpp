// How far a suite may expand: variables that repeat each other, and grids that cross many axes,
// ran for hours or silently lost their rows (inputs for the suite_toml fuzzer, fuzz/).
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <fmt/format.h>

#include "attnlab/error.h"
#include "attnlab/nmt/suite/suite.h"
#include "nmt/checkpoint_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;
using attnlab::nmt::testing::contains;
using attnlab::nmt::testing::error_of;
using attnlab::nmt::testing::ScratchDir;

namespace {

constexpr const char* kTinyBase = "[base.data.synthetic]\ntrain_pairs = 10\n";

std::string write_suite(const ScratchDir& dir, const std::string& text) {
  const auto path = dir / "suite.toml";
  std::ofstream(path) << text;
  return path.string();
}

// [vars] v0 .. v<levels>: each v<i> is "${v<i+1>}${v<i+1>}", the last one `last`.
std::string doubling_vars(int levels, const std::string& last) {
  std::string text = "[vars]\n";
  for (int i = 0; i < levels; ++i) text += fmt::format("v{} = \"${{v{}}}${{v{}}}\"\n", i, i + 1, i + 1);
  return text + fmt::format("v{} = \"{}\"\n", levels, last);
}

// [grids.g] with `axes` axes of two values each.
std::string grid(int axes) {
  std::string text = "[grids.g]\naxes = [";
  for (int i = 0; i < axes; ++i) text += fmt::format("{}{{ \"training.max_steps\" = [1, 2] }}", i ? ", " : " ");
  return text + " ]\n";
}

}  // namespace

TEST_CASE("suite variables that repeat each other are expanded once each") {
  ScratchDir dir;
  // 2^64 substitutions without memoization; every value is empty.
  const Suite s = load_suite(write_suite(dir, "[suite]\nreference = \"a${v0}b\"\n" + doubling_vars(64, "") + kTinyBase));
  CHECK(s.reference == "ab");
  CHECK(s.rows.size() == 1);
}

TEST_CASE("a suite variable that expands past 64 KiB is refused") {
  ScratchDir dir;
  // 2^40 bytes.
  const std::string error =
      error_of([&] { load_suite(write_suite(dir, "[suite]\nreference = \"${v0}\"\n" + doubling_vars(40, "x") + kTinyBase)); });
  CHECK(contains(error, "expands to more than 65536 bytes (variables that repeat each other?)"));
  CHECK(contains(error, "suite.toml:"));
  // 2^15 bytes is fine.
  const Suite s = load_suite(write_suite(dir, "[suite]\nreference = \"${v0}\"\n" + doubling_vars(15, "x") + kTinyBase));
  CHECK(s.reference == std::string(32768, 'x'));
}

TEST_CASE("a grid that crosses to more than 1000 rows is refused") {
  ScratchDir dir;
  // 2^20 rows took hours; 2^64 wrapped to 0 and dropped the grid without a word.
  for (int axes : {10, 20, 64}) {
    CAPTURE(axes);
    const std::string error = error_of([&] { load_suite(write_suite(dir, kTinyBase + grid(axes))); });
    CHECK(contains(error, "grids.g: its axes of 2 x 2 x 2"));
    CHECK(contains(error, "values cross to more than the 1000 rows a suite may hold"));
  }
  CHECK(load_suite(write_suite(dir, kTinyBase + grid(3))).rows.size() == 1 + 8);
}

TEST_CASE("a suite of more than 1000 rows with their seeds is refused") {
  ScratchDir dir;
  std::string seeds;
  for (int i = 0; i < 126; ++i) seeds += fmt::format("{}{}", i ? ", " : "", i);
  // (1 base row + 8 grid rows) x 126 seeds = 1134.
  const std::string error =
      error_of([&] { load_suite(write_suite(dir, "[suite]\nseeds = [" + seeds + "]\n" + kTinyBase + grid(3))); });
  CHECK(contains(error, "the suite expands to 1134 rows (rows and grid points times their seeds), more than the 1000"));
}

TEST_CASE("a grid axis of empty tables is refused, not a grid of no rows") {
  ScratchDir dir;
  const std::string error = error_of([&] {
    load_suite(write_suite(dir, std::string(kTinyBase) + "[grids.g]\naxes = [ { model = {} } ]\n"));
  });
  CHECK(contains(error, "grids.g.axes[0]: expected a table of key = [values...]"));
}
