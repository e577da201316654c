// attnlab's environment variables (attnlab/env.h): one table, one rule for switches, values read
// as text, every reader's name in the table, and the list of those set that a manifest records.
#include <doctest/doctest.h>

#include <cstdlib>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/env.h"
#include "attnlab/error.h"

using namespace attnlab;

namespace {

// Sets (or unsets, with nullptr) a variable for one scope, then puts back what was there.
class ScopedVariable {
 public:
  ScopedVariable(std::string name, const char* text) : name_(std::move(name)) {
    if (const char* before = std::getenv(name_.c_str())) saved_ = before;
    if (text) ::setenv(name_.c_str(), text, 1);
    else ::unsetenv(name_.c_str());
  }
  ~ScopedVariable() {
    if (saved_) ::setenv(name_.c_str(), saved_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

}  // namespace

TEST_CASE("a switch is on for 1, true, yes and on, off when unset or 0, false, no, off or empty, in any case") {
  for (const char* on : {"1", "true", "TRUE", "Yes", "on", "ON"}) {
    CAPTURE(on);
    ScopedVariable v("ATTNLAB_PROFILE", on);
    CHECK(env::flag("ATTNLAB_PROFILE"));
  }
  for (const char* off : {"", "0", "false", "False", "no", "NO", "off"}) {
    CAPTURE(off);
    ScopedVariable v("ATTNLAB_PROFILE", off);
    CHECK_FALSE(env::flag("ATTNLAB_PROFILE"));
  }
  ScopedVariable unset("ATTNLAB_PROFILE", nullptr);
  CHECK_FALSE(env::flag("ATTNLAB_PROFILE"));
}

TEST_CASE("a switch set to another text is an error naming the variable, the text and the spellings") {
  for (const char* bad : {"2", "maybe", " 1", "enabled"}) {
    CAPTURE(bad);
    ScopedVariable v("ATTNLAB_NO_BF16_LOGITS", bad);
    const std::string expected =
        std::string("ATTNLAB_NO_BF16_LOGITS='") + bad + "': a switch is on for 1, true, yes or on and off for 0, false, no, off";
    CHECK_THROWS_WITH_AS(env::flag("ATTNLAB_NO_BF16_LOGITS"), doctest::Contains(expected.c_str()), Error);
  }
}

TEST_CASE("a value is its text, absent when unset or empty") {
  {
    ScopedVariable v("ATTNLAB_PLUGIN_PATH", "/a:/b");
    CHECK(env::value("ATTNLAB_PLUGIN_PATH") == std::optional<std::string>("/a:/b"));
  }
  {
    ScopedVariable v("ATTNLAB_PLUGIN_PATH", "");
    CHECK_FALSE(env::value("ATTNLAB_PLUGIN_PATH").has_value());
  }
  ScopedVariable v("ATTNLAB_PLUGIN_PATH", nullptr);
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
  CHECK(names.size() == 12);
}

TEST_CASE("the variables set are listed in the table's order, the numerics ones alone on request") {
  std::list<ScopedVariable> cleared;
  for (const env::Variable& v : env::variables()) cleared.emplace_back(std::string(v.name), nullptr);
  CHECK(env::set_now(false).empty());
  ScopedVariable profile("ATTNLAB_PROFILE", "1");
  ScopedVariable operands("ATTNLAB_NO_BF16_OPERANDS", "0");  // set to an off spelling: still listed
  ScopedVariable sm90("ATTNLAB_FLASH_SM90", "yes");
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(env::set_now(true) == Pairs{{"ATTNLAB_NO_BF16_OPERANDS", "0"}, {"ATTNLAB_FLASH_SM90", "yes"}});
  CHECK(env::set_now(false) ==
        Pairs{{"ATTNLAB_NO_BF16_OPERANDS", "0"}, {"ATTNLAB_FLASH_SM90", "yes"}, {"ATTNLAB_PROFILE", "1"}});
}
