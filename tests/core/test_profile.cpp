#include <doctest/doctest.h>

#include <algorithm>

#include "attnlab/attnlab.h"
#include "attnlab/profile.h"

using namespace attnlab;

namespace {
const profile::Entry* find(const std::vector<profile::Entry>& all, std::string_view op) {
  const auto it = std::find_if(all.begin(), all.end(), [&](const profile::Entry& e) { return e.op == op; });
  return it == all.end() ? nullptr : &*it;
}
}  // namespace

TEST_CASE("the backward profiler counts every node's backward by op name") {
  profile::set_enabled(true);
  profile::reset();
  Tensor x = Tensor::from_vector<double>({2}, {1.0, 2.0});
  x.set_requires_grad();
  // y = x * x + x: one mul, one add, and x's sink receives three gradients, two of which meet in
  // the engine (mul's two inputs are the same leaf) before the sink.
  Tensor y = add(mul(x, x), x);
  y.backward(Tensor::full({2}, 1.0, DType::f64));
  profile::set_enabled(false);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3.0, 5.0});  // unchanged by profiling

  const auto all = profile::entries();
  const profile::Entry* mul_entry = nullptr;
  const profile::Entry* sink = find(all, "bwd AccumulateGrad");
  const profile::Entry* summed = find(all, "bwd (gradient accumulation)");
  for (const auto& e : all)
    if (e.op == "bwd mul") mul_entry = &e;
  REQUIRE(sink != nullptr);
  CHECK(sink->calls == 1);
  REQUIRE(summed != nullptr);
  CHECK(summed->calls == 2);
  REQUIRE(mul_entry != nullptr);
  CHECK(mul_entry->calls == 1);
  std::int64_t calls = 0;
  for (const auto& e : all) {
    CHECK(e.seconds >= 0.0);
    calls += e.calls;
  }
  CHECK(calls == 5);  // add, mul, two sums, the sink
  CHECK(std::is_sorted(all.begin(), all.end(),
                       [](const profile::Entry& a, const profile::Entry& b) { return a.seconds > b.seconds; }));

  const std::string t = profile::table(2.0);  // per 2 steps: the sink's 1 call reads 0 (rounded)
  CHECK(t.find("| op | calls | ms | share |") == 0);
  CHECK(t.find("| bwd AccumulateGrad | ") != std::string::npos);
  CHECK(t.find("| total | |") != std::string::npos);
  profile::reset();
  CHECK(profile::entries().empty());
}

TEST_CASE("after mark() the forward ops are counted until the backward starts") {
  profile::set_enabled(true);
  profile::reset();
  Tensor x = Tensor::from_vector<double>({2}, {1.0, 2.0});
  x.set_requires_grad();
  Tensor unmarked = scale(x, 2.0);  // before mark(): not counted
  profile::mark();
  Tensor y = add(mul(x, x), unmarked);
  y.backward(Tensor::full({2}, 1.0, DType::f64));
  CHECK_FALSE(profile::marked());  // the backward stopped the forward clock
  Tensor after = scale(x, 2.0);   // after the backward: not counted
  profile::set_enabled(false);
  const auto all = profile::entries();
  REQUIRE(find(all, "fwd mul") != nullptr);
  REQUIRE(find(all, "fwd add") != nullptr);
  CHECK(find(all, "fwd mul")->calls == 1);
  CHECK(find(all, "fwd add")->calls == 1);
  CHECK(find(all, "fwd scale") == nullptr);
  REQUIRE(find(all, "bwd scale") != nullptr);
  CHECK(find(all, "bwd scale")->calls == 1);
  profile::reset();
}

TEST_CASE("without the profiler nothing is recorded") {
  profile::set_enabled(false);
  profile::reset();
  Tensor x = Tensor::full({3}, 2.0, DType::f64);
  x.set_requires_grad();
  scale(x, 3.0).backward(Tensor::full({3}, 1.0, DType::f64));
  CHECK(profile::entries().empty());
}
