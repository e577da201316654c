// A closed set of named choices: one table gives the names, the parsing and the error.
#include <doctest/doctest.h>

#include "attnlab/error.h"
#include "attnlab/name_table.h"
#include "attnlab/suggest.h"

using namespace attnlab;

namespace {

enum class Shade { light, dark, none };
constexpr auto kShades = name_table<Shade>("shade", {{Shade::light, "light"}, {Shade::dark, "dark"}, {Shade::none, "none"}});

static_assert(kShades.name(Shade::dark) == "dark");
static_assert(kShades.find("none") == Shade::none);
static_assert(!kShades.find("grey").has_value());

}  // namespace

TEST_CASE("a name table round trips its names and lists them, in order, for an unknown one") {
  for (const auto& [value, name] : kShades) {
    CHECK(kShades.name(value) == name);
    CHECK(kShades.parse(name) == value);
  }
  CHECK(kShades.names() == "light, dark, none");
  CHECK(kShades.unknown("grey") == "unknown shade 'grey' (valid: light, dark, none)");
  CHECK_THROWS_WITH_AS(kShades.parse("grey"), "unknown shade 'grey' (valid: light, dark, none)", Error);
  // A close name gets a suggestion.
  CHECK(kShades.unknown("drak") == "unknown shade 'drak' (valid: light, dark, none); did you mean 'dark'?");
}

TEST_CASE("suggest finds a plausible typo, a swapped pair counting as one, and nothing further") {
  const std::vector<std::string> commands{"train", "translate", "eval", "report"};
  CHECK(suggest("trian", commands) == "train");      // swapped neighbours: one typo
  CHECK(suggest("tain", commands) == "train");       // a letter missing
  CHECK(suggest("evl", commands) == "eval");
  CHECK(suggest("reprot", commands) == "report");
  CHECK(suggest("translte", commands) == "translate");
  CHECK(suggest("fp16", {"fp32", "tf32", "bf16"}).empty());  // two of four letters: another name
  CHECK(suggest("xyz", commands).empty());
  CHECK(suggest("train", {}).empty());
}
