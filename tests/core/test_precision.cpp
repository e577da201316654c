// The compute precision: names, parsing, the scoped thread-local guard.
#include <doctest/doctest.h>

#include <thread>

#include "attnlab/error.h"
#include "attnlab/precision.h"

using namespace attnlab;

TEST_CASE("precision names round trip and unknown names list the valid ones") {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    CHECK(precision_from_name(precision_name(p)) == p);
    CHECK(find_precision(precision_name(p)) == p);
  }
  CHECK(precision_name(Precision::bf16) == "bf16");
  CHECK_FALSE(find_precision("fp16").has_value());
  CHECK_THROWS_WITH_AS(precision_from_name("fp16"), "unknown precision 'fp16' (valid: fp32, tf32, bf16)", Error);
}

TEST_CASE("precision guard nests and restores") {
  CHECK(compute_precision() == Precision::fp32);
  {
    const PrecisionGuard outer(Precision::bf16);
    CHECK(compute_precision() == Precision::bf16);
    {
      const PrecisionGuard inner(Precision::tf32);
      CHECK(compute_precision() == Precision::tf32);
    }
    CHECK(compute_precision() == Precision::bf16);
  }
  CHECK(compute_precision() == Precision::fp32);
}

TEST_CASE("precision is per thread") {
  const PrecisionGuard guard(Precision::bf16);
  Precision seen = Precision::bf16;
  std::thread([&] { seen = compute_precision(); }).join();
  CHECK(seen == Precision::fp32);
  CHECK(compute_precision() == Precision::bf16);
}
