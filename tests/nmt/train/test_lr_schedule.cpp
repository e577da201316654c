// The learning-rate schedules of [training] schedule, by known values.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <string_view>

#include "attnlab/error.h"
#include "attnlab/nmt/experiment/training_choices.h"
#include "attnlab/nmt/train/lr_schedule.h"
#include "attnlab/nmt/train/optimizer.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

LrSchedule schedule(std::string_view kind, double lr = 0.01, double min_lr = 0.0) {
  return {.kind = kLrScheduleKinds.parse(kind), .warmup_steps = 100, .max_steps = 1100, .d_model = 512, .lr_scale = 1.0, .lr = lr,
          .min_lr = min_lr};
}

}  // namespace

TEST_CASE("the paper's schedule without lr is transformer_lr to the bit, with lr it peaks there") {
  LrSchedule paper = schedule("inverse_sqrt", 0.0);
  paper.lr_scale = 2.0;
  for (std::int64_t step : {1, 50, 100, 101, 400, 5000})
    CHECK(learning_rate(paper, step) == transformer_lr(step, 512, 100, 2.0));
  CHECK(peak_lr(paper) == doctest::Approx(2.0 / std::sqrt(512.0 * 100.0)));
  const LrSchedule peaked = schedule("inverse_sqrt", 0.01);
  CHECK(learning_rate(peaked, 100) == doctest::Approx(0.01));
  CHECK(learning_rate(peaked, 50) == doctest::Approx(0.005));
  CHECK(learning_rate(peaked, 400) == doctest::Approx(0.005));  // sqrt(100 / 400) of the peak
}

TEST_CASE("every schedule warms up linearly to its peak") {
  for (const auto& entry : kLrScheduleKinds) {
    const auto name = entry.second;  // not a structured binding: clang 14's lambdas cannot capture one
    CAPTURE(name);
    const LrSchedule s = schedule(name);
    CHECK(learning_rate(s, 1) == doctest::Approx(0.0001));
    CHECK(learning_rate(s, 25) == doctest::Approx(0.0025));
    CHECK(learning_rate(s, 100) == doctest::Approx(0.01));
  }
}

TEST_CASE("cosine, linear and constant decay as named after the warm-up") {
  const LrSchedule cosine = schedule("cosine", 0.01, 0.001), linear = schedule("linear", 0.01, 0.001);
  // Halfway through the decay (step 600 of 100 .. 1100) and a quarter of the way.
  CHECK(learning_rate(cosine, 600) == doctest::Approx(0.0055));
  CHECK(learning_rate(cosine, 350) == doctest::Approx(0.001 + 0.009 * 0.5 * (1 + std::cos(std::numbers::pi / 4))));
  CHECK(learning_rate(linear, 600) == doctest::Approx(0.0055));
  CHECK(learning_rate(linear, 350) == doctest::Approx(0.001 + 0.009 * 0.75));
  for (const LrSchedule* s : {&cosine, &linear}) {
    CHECK(learning_rate(*s, 1100) == doctest::Approx(0.001));
    CHECK(learning_rate(*s, 5000) == doctest::Approx(0.001));  // after max_steps: min_lr
  }
  CHECK(learning_rate(schedule("constant"), 5000) == doctest::Approx(0.01));
}

TEST_CASE("a schedule names what is wrong with it") {
  CHECK_THROWS_WITH_AS(schedule("exponential"),
                       doctest::Contains("unknown learning-rate schedule 'exponential' (valid: inverse_sqrt, cosine, linear, constant)"),
                       Error);
  CHECK_THROWS_WITH_AS(learning_rate(schedule("cosine"), 0), doctest::Contains("learning rate (cosine): step 0"), Error);
}
