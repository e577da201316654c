// attnlab's environment variables (attnlab/env.h): one table, one rule for switches, values read
// as text, every reader's name in the table, and the list of those set that a manifest records.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/env.h"
#include "attnlab/error.h"
#include "support/env_scope.h"

using namespace attnlab;

using attnlab::testing::EnvScope;

TEST_CASE("a switch is on for 1, true, yes and on, off when unset or 0, false, no, off or empty, in any case") {
  for (const char* on : {"1", "true", "TRUE", "Yes", "on", "ON"}) {
    CAPTURE(on);
    EnvScope v;
    v.set("ATTNLAB_PROFILE", on);
    CHECK(env::flag("ATTNLAB_PROFILE"));
  }
  for (const char* off : {"", "0", "false", "False", "no", "NO", "off"}) {
    CAPTURE(off);
    EnvScope v;
    v.set("ATTNLAB_PROFILE", off);
    CHECK_FALSE(env::flag("ATTNLAB_PROFILE"));
  }
  EnvScope unset;
  unset.set("ATTNLAB_PROFILE", nullptr);
  CHECK_FALSE(env::flag("ATTNLAB_PROFILE"));
}

TEST_CASE("a switch set to another text is an error naming the variable, the text and the spellings") {
  for (const char* bad : {"2", "maybe", " 1", "enabled"}) {
    CAPTURE(bad);
    EnvScope v;
    v.set("ATTNLAB_NO_BF16_LOGITS", bad);
    const std::string expected =
        std::string("ATTNLAB_NO_BF16_LOGITS='") + bad + "': a switch is on for 1, true, yes or on and off for 0, false, no, off";
    CHECK_THROWS_WITH_AS(env::flag("ATTNLAB_NO_BF16_LOGITS"), doctest::Contains(expected.c_str()), Error);
  }
}

TEST_CASE("a value is its text, absent when unset or empty") {
  {
    EnvScope v;
    v.set("ATTNLAB_PLUGIN_PATH", "/a:/b");
    CHECK(env::value("ATTNLAB_PLUGIN_PATH") == std::optional<std::string>("/a:/b"));
  }
  {
    EnvScope v;
    v.set("ATTNLAB_PLUGIN_PATH", "");
    CHECK_FALSE(env::value("ATTNLAB_PLUGIN_PATH").has_value());
  }
  EnvScope v;
  v.set("ATTNLAB_PLUGIN_PATH", nullptr);
  CHECK_FALSE(env::value("ATTNLAB_PLUGIN_PATH").has_value());
}

TEST_CASE("a name outside the table, or read as the other kind, is refused") {
  CHECK_THROWS_WITH_AS(env::flag("ATTNLAB_NO_SUCH_SWITCH"),
                       doctest::Contains("ATTNLAB_NO_SUCH_SWITCH is not in attnlab's table of variables"), Error);
  CHECK_THROWS_WITH_AS(env::value("ATTNLAB_PROFILE"), doctest::Contains("ATTNLAB_PROFILE is a switch, not a value"),
                       Error);
  CHECK_THROWS_WITH_AS(env::flag("ATTNLAB_CUDA_MEMORY_LIMIT"),
                       doctest::Contains("ATTNLAB_CUDA_MEMORY_LIMIT is a value, not a switch"), Error);
}

TEST_CASE("the table names each variable once, with what it does") {
  std::set<std::string_view> names;
  for (const env::Variable& v : env::variables()) {
    CAPTURE(v.name);
    CHECK(v.name.starts_with("ATTNLAB_"));
    CHECK_FALSE(v.what.empty());
    CHECK(names.insert(v.name).second);
  }
  CHECK(names.size() == 14);
}

TEST_CASE("the variables set are listed in the table's order, the numerics ones alone on request") {
  EnvScope scope;
  for (const env::Variable& v : env::variables()) scope.set(std::string(v.name).c_str(), nullptr);
  CHECK(env::set_now(false).empty());
  scope.set("ATTNLAB_PROFILE", "1");
  scope.set("ATTNLAB_NO_BF16_OPERANDS", "0");  // set to an off spelling: still listed
  scope.set("ATTNLAB_FLASH_SM90", "yes");
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(env::set_now(true) == Pairs{{"ATTNLAB_NO_BF16_OPERANDS", "0"}, {"ATTNLAB_FLASH_SM90", "yes"}});
  CHECK(env::set_now(false) ==
        Pairs{{"ATTNLAB_NO_BF16_OPERANDS", "0"}, {"ATTNLAB_FLASH_SM90", "yes"}, {"ATTNLAB_PROFILE", "1"}});
}
