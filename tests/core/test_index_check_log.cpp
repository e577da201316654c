// The index checks' encoding (index_check.h) and host bookkeeping (index_check_log.h): keys order
// by position and keep the value (clamped to int32), the rule with and without a skipped value,
// slots handed out in order until full, and the message of the first failing check.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/error.h"
#include "device/index_check.h"
#include "device/index_check_log.h"

using namespace attnlab;
namespace ic = attnlab::index_check;

TEST_CASE("index check keys keep the position and the value, and order by position") {
  const std::vector<std::int64_t> values = {0, 1, -1, 12345, -7, ic::kValueMax, ic::kValueMin};
  for (std::int64_t position : {std::int64_t{0}, std::int64_t{3}, ic::kMaxCheckedPositions - 1}) {
    for (std::int64_t v : values) {
      CAPTURE(position);
      CAPTURE(v);
      const std::uint64_t k = ic::key(position, v);
      CHECK(k != ic::kClean);
      CHECK(ic::key_position(k) == position);
      CHECK(ic::key_value(k) == v);
    }
  }
  // Beyond int32 the value is clamped; the position still decides the order.
  CHECK(ic::key_value(ic::key(5, std::int64_t{1} << 40)) == ic::kValueMax);
  CHECK(ic::key_value(ic::key(5, -(std::int64_t{1} << 40))) == ic::kValueMin);
  CHECK(ic::key(4, ic::kValueMax) < ic::key(5, ic::kValueMin));
  CHECK(ic::key(4, -1) < ic::key(5, 0));
}

TEST_CASE("index check rules: a range, and a range with one skipped value") {
  const ic::Rule range{.lo = 0, .hi = 5};
  CHECK(ic::allowed(0, range));
  CHECK(ic::allowed(4, range));
  CHECK_FALSE(ic::allowed(5, range));
  CHECK_FALSE(ic::allowed(-1, range));
  const ic::Rule skip{.lo = 0, .hi = 5, .has_skip = true, .skip = -100};
  CHECK(ic::allowed(-100, skip));
  CHECK_FALSE(ic::allowed(-99, skip));
  CHECK(ic::allowed(3, skip));
  const ic::Rule skip_inside{.lo = 0, .hi = 5, .has_skip = true, .skip = 2};  // e.g. padding id 2
  CHECK(ic::allowed(2, skip_inside));
  CHECK_FALSE(ic::allowed(7, skip_inside));
}

TEST_CASE("index check log: slots in order until full, then nothing until collected") {
  IndexCheckLog log(3);
  CHECK(log.slots() == 3);
  CHECK(log.pending() == 0);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto slot = log.reserve({"op", "id", "rule"});
    REQUIRE(slot.has_value());
    CHECK(*slot == i);
  }
  CHECK(log.pending() == 3);
  CHECK_FALSE(log.reserve({"op", "id", "rule"}).has_value());
  const std::vector<std::uint64_t> clean(3, ic::kClean);
  CHECK_FALSE(log.collect(clean, "cuda:0").has_value());
  CHECK(log.pending() == 0);
  CHECK(log.reserve({"op", "id", "rule"}) == std::size_t{0});
  CHECK_THROWS_WITH_AS(log.collect(clean, "cuda:0"), doctest::Contains("3 records read back for 1 pending checks"),
                       Error);
  CHECK_THROWS_AS(IndexCheckLog(0), Error);
}

TEST_CASE("index check log: the first failing check's message, with the CPU's wording") {
  IndexCheckLog log(8);
  log.reserve({"embedding", "id", "for vocabulary size V = 5 (ids must be in [0, 5))"});
  log.reserve({"cross_entropy", "target", "for V = 3 (targets must be in [0, 3) or equal ignore_index = 0)"});
  log.reserve({"embedding", "id", "for vocabulary size V = 9 (ids must be in [0, 9))"});
  log.reserve({"embedding", "id", "for vocabulary size V = 9 (ids must be in [0, 9))"});
  const std::vector<std::uint64_t> records = {ic::kClean, ic::key(1, 3), ic::key(0, -4), ic::key(6, 99)};
  const auto message = log.collect(records, "cuda:1");
  REQUIRE(message.has_value());
  const std::string m = *message;
  CAPTURE(m);
  CHECK(m.starts_with("cross_entropy: target 3 at position 1 is out of range for V = 3 (targets must be in "
                      "[0, 3) or equal ignore_index = 0)"));
  CHECK(m.find("cuda:1") != std::string::npos);
  CHECK(m.find("2 later calls failed their check too") != std::string::npos);
  CHECK(log.pending() == 0);

  log.reserve({"embedding", "id", "rule"});
  const auto big = log.collect(std::vector<std::uint64_t>{ic::key(2, std::int64_t{1} << 40)}, "cuda:0");
  REQUIRE(big.has_value());
  CHECK(big->starts_with("embedding: id 2147483647 or more at position 2 is out of range rule"));
  CHECK(big->find("later") == std::string::npos);
  log.reserve({"embedding", "id", "rule"});
  const auto low = log.collect(std::vector<std::uint64_t>{ic::key(0, -(std::int64_t{1} << 33))}, "cuda:0");
  REQUIRE(low.has_value());
  CHECK(low->starts_with("embedding: id -2147483648 or less at position 0"));
}

TEST_CASE("index check log: a check of one condition reports its own message whatever the key") {
  IndexCheckLog log(4);
  log.reserve({"embedding", "id", "rule"});
  log.reserve({.op = "gradient_clip", .message = "the norm is not finite"});
  const auto m = log.collect(std::vector<std::uint64_t>{ic::kClean, ic::key(0, 1)}, "cuda:0");
  REQUIRE(m.has_value());
  CHECK(m->starts_with("gradient_clip: the norm is not finite (checked on cuda:0"));
  CHECK(m->find("position") == std::string::npos);
  log.reserve({.op = "gradient_clip", .message = "the norm is not finite"});
  log.reserve({"embedding", "id", "rule"});
  const auto first = log.collect(std::vector<std::uint64_t>{ic::key(0, 2), ic::key(5, 7)}, "cuda:0");
  REQUIRE(first.has_value());
  CHECK(first->starts_with("gradient_clip: the norm is not finite"));
  CHECK(first->find("1 later call failed its check too") != std::string::npos);
}
