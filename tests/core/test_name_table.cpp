// A closed set of named choices: one table gives the names, the parsing and the error.
#include <doctest/doctest.h>

#include "attnlab/error.h"
#include "attnlab/name_table.h"

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
}
