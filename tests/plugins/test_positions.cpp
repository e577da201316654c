// Positions inside attention: the rope, alibi and relative plugins against values worked by hand,
// and the conformance kit failing schemes and attention plugins that get positions wrong.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attnlab/ops.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/plugin/conformance.h"
#include "support/plugin_testing.h"

using namespace attnlab;

namespace {

Registry& registry() {
  REQUIRE(testing::in_tree_plugins().failures.empty());
  return testing::in_tree_plugins().registry;
}

using Built = testing::PositionsPart;

Built build(const Registry& reg, const std::string& name, std::int64_t heads, std::int64_t d_k, std::int64_t d_v,
            const std::map<std::string, OptionValue>& options = {}) {
  return testing::build_positions(reg, name, heads, d_k, d_v, options);
}

double at(const std::vector<double>& v, std::size_t i) { return v[i]; }

}  // namespace

TEST_CASE("rope rotates each pair (i, i + d/2) by position times base^(-2i/d)") {
  Built b = build(registry(), "rope", 1, 4, 4, {{"base", 100.0}});
  REQUIRE(b.inside);
  const std::vector<double> x = {1.0, 2.0, 3.0, 4.0};
  // position 3 (offset 2, second row): angles 3 * 100^0 = 3 and 3 * 100^(-1/2) = 0.3
  const Tensor in = Tensor::from_vector<double>({1, 1, 2, 4}, {0, 0, 0, 0, 1.0, 2.0, 3.0, 4.0});
  const auto out = b.inside->rotate(in, 2).to_vector<double>();
  const double a0 = 3.0, a1 = 0.3;
  CHECK(at(out, 4) == doctest::Approx(x[0] * std::cos(a0) - x[2] * std::sin(a0)));
  CHECK(at(out, 5) == doctest::Approx(x[1] * std::cos(a1) - x[3] * std::sin(a1)));
  CHECK(at(out, 6) == doctest::Approx(x[2] * std::cos(a0) + x[0] * std::sin(a0)));
  CHECK(at(out, 7) == doctest::Approx(x[3] * std::cos(a1) + x[1] * std::sin(a1)));
  // Nothing is added to the embeddings.
  const Tensor e = Tensor::from_vector<double>({1, 2, 8}, std::vector<double>(16, 0.5));
  CHECK(b.encoding->forward(e, 0).to_vector<double>() == e.to_vector<double>());
  // An odd head size cannot rotate in pairs.
  CHECK_THROWS_WITH_AS(build(registry(), "rope", 1, 3, 3), doctest::Contains("d_k = 3 must be even"), Error);
}

TEST_CASE("alibi's slopes are the paper's, also for a head count that is not a power of two") {
  auto slopes = [](std::int64_t heads) {
    Built b = build(registry(), "alibi", heads, 2, 2);
    // Query 1 against key 0: the bias is -m_n.
    const Tensor q = Tensor::zeros({1, heads, 1, 2}, DType::f64);
    const auto bias = b.inside->score_terms(q, 1, 2).to_vector<double>();  // [h, 1, 2]
    std::vector<double> m;
    for (std::int64_t n = 0; n < heads; ++n) {
      CHECK(bias[static_cast<std::size_t>(2 * n + 1)] == 0.0);  // the query's own position
      m.push_back(-bias[static_cast<std::size_t>(2 * n)]);
    }
    return m;
  };
  const auto eight = slopes(8);
  for (std::size_t n = 0; n < 8; ++n) CHECK(eight[n] == doctest::Approx(std::pow(2.0, -static_cast<double>(n + 1))));
  // 6 heads: 2^-2, 2^-4, 2^-6, 2^-8 (four heads), then 2^-1, 2^-3 (every other of eight).
  const std::vector<double> six = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  const auto got = slopes(6);
  for (std::size_t n = 0; n < 6; ++n) CHECK(got[n] == doctest::Approx(six[n]));
  // The bias grows linearly with the distance, on both sides (one head: m = 2^-8).
  Built b = build(registry(), "alibi", 1, 2, 2);
  const auto row = b.inside->score_terms(Tensor::zeros({1, 1, 1, 2}, DType::f64), 2, 6).to_vector<double>();
  CHECK(row == std::vector<double>({-2.0 / 256, -1.0 / 256, 0.0, -1.0 / 256, -2.0 / 256, -3.0 / 256}));
}

TEST_CASE("relative positions add q . a^K_clip(j - i) / sqrt(d_k) and sum_j w_ij a^V_clip(j - i)") {
  Built b = build(registry(), "relative", 1, 2, 3, {{"max_distance", std::int64_t{1}}});
  const auto params = b.inside->named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].first == "relative_keys");
  CHECK(params[0].second.shape() == Shape({3, 2}));
  CHECK(params[1].second.shape() == Shape({3, 3}));
  const auto ak = params[0].second.to_vector<double>(), av = params[1].second.to_vector<double>();
  const Tensor q = Tensor::from_vector<double>({1, 1, 2, 2}, {0.5, -1.0, 2.0, 0.25});
  const auto s = b.inside->score_terms(q, 1, 4).to_vector<double>();  // queries at 1, 2; keys 0..3
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 4; ++j) {
      const std::int64_t r = std::clamp<std::int64_t>(j - (1 + i), -1, 1) + 1;
      const double want = (q.to_vector<double>()[static_cast<std::size_t>(2 * i)] * ak[static_cast<std::size_t>(2 * r)] +
                           q.to_vector<double>()[static_cast<std::size_t>(2 * i + 1)] * ak[static_cast<std::size_t>(2 * r + 1)]) /
                          std::sqrt(2.0);
      CHECK(s[static_cast<std::size_t>(i * 4 + j)] == doctest::Approx(want));
    }
  // One query at position 3 over keys 0..3 with weights 0.1, 0.2, 0.3, 0.4: distances -3, -2, -1, 0
  // clip to -1, -1, -1, 0.
  const Tensor w = Tensor::from_vector<double>({1, 1, 1, 4}, {0.1, 0.2, 0.3, 0.4});
  const auto z = b.inside->value_terms(w, 3).to_vector<double>();
  for (std::size_t c = 0; c < 3; ++c) CHECK(z[c] == doctest::Approx(0.6 * av[c] + 0.4 * av[3 + c]));
  // Without value terms there is no a^V.
  CHECK(build(registry(), "relative", 1, 2, 3, {{"values", false}}).inside->named_parameters().size() == 1);
}

namespace {

// A rotary scheme that forgets its offset: what the kit must catch.
class ForgetsOffset final : public AttentionPositions {
 public:
  Tensor rotate(const Tensor& x, std::int64_t) const override {
    std::vector<double> s(static_cast<std::size_t>(x.dim(2) * x.dim(3)));
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = 1.0 + 0.1 * static_cast<double>(i / x.dim(3));
    return mul(x, Tensor::from_vector<double>({x.dim(2), x.dim(3)}, s).to(x.dtype()));
  }
};

class ForgetsOffsetEncoding final : public PositionalEncoding {
 public:
  Tensor forward(const Tensor& x, std::int64_t) override { return x; }
  std::shared_ptr<AttentionPositions> attention_positions(const BuildContext&) const override {
    return std::make_shared<ForgetsOffset>();
  }
};

// scaled_dot that declares every hook but drops the positions from its inputs.
class IgnoresPositions final : public Attention {
 public:
  explicit IgnoresPositions(std::shared_ptr<Attention> inner) : inner_(register_module("inner", std::move(inner))) {}
  Tensor forward(const AttentionInputs& in) override {
    AttentionInputs without = in;
    without.positions = nullptr;
    return inner_->forward(without);
  }

 private:
  std::shared_ptr<Attention> inner_;
};

std::vector<std::string> failed_checks(const ConformanceReport& report) {
  std::vector<std::string> out;
  for (const auto& c : report.checks)
    if (!c.passed) out.push_back(c.name);
  return out;
}

}  // namespace

TEST_CASE("the conformance kit fails a scheme that forgets its offset and one that hides its hooks") {
  Registry reg;
  reg.add_positional({.name = "forgets_offset", .positions = {.rotate = true}},
                     [](const BuildContext&) { return std::make_shared<ForgetsOffsetEncoding>(); });
  reg.add_positional({.name = "undeclared"},  // uses rotation, declares nothing
                     [](const BuildContext&) { return std::make_shared<ForgetsOffsetEncoding>(); });
  const auto forgets = failed_checks(run_conformance(reg, PluginFamily::positional, "forgets_offset"));
  CHECK(std::find(forgets.begin(), forgets.end(), "rotation: an offset continues the sequence (incremental decoding)") !=
        forgets.end());
  const ConformanceReport undeclared = run_conformance(reg, PluginFamily::positional, "undeclared");
  CHECK_FALSE(undeclared.passed());
  CHECK(undeclared.summary().find("has a part inside attention but declares no hooks") != std::string::npos);
}

TEST_CASE("the conformance kit fails an attention plugin that declares position hooks and ignores them") {
  Registry reg;
  const Registry& in_tree = registry();
  PluginInfo info = in_tree.find(PluginFamily::attention, "scaled_dot");
  reg.add_attention(info, [&in_tree](const BuildContext& ctx) { return in_tree.make_attention("scaled_dot", ctx); });
  info.name = "ignores_positions";
  reg.add_attention(info, [&in_tree](const BuildContext& ctx) {
    return std::make_shared<IgnoresPositions>(in_tree.make_attention("scaled_dot", ctx));
  });
  ConformanceOptions options;
  options.reference = "scaled_dot";
  const auto failed = failed_checks(run_conformance(reg, PluginFamily::attention, "ignores_positions", options));
  for (const char* hook : {"rotation", "score terms", "value terms"})
    CHECK_MESSAGE(std::find(failed.begin(), failed.end(), fmt::format("positions: the output changes with {}", hook)) !=
                      failed.end(),
                  hook);
  CHECK(std::find(failed.begin(), failed.end(),
                  "positions (rotation, score terms, value terms): outputs and gradients match reference scaled_dot "
                  "(causal self-attention)") != failed.end());
}

TEST_CASE("an attention plugin that does not apply a scheme's hooks is refused naming both plugins") {
  const Registry& reg = registry();
  auto needs = [&](const std::string& positional) {
    return AttentionNeeds{.positions = reg.find(PluginFamily::positional, positional).positions,
                          .positional = positional};
  };
  const PluginInfo& flash = reg.find(PluginFamily::attention, "flash");
  for (const char* scheme : {"rope", "alibi", "relative"}) {
    CHECK_FALSE(check_attention_support(flash, Device::cpu(), DType::f32, 4, 4, needs(scheme)).has_value());
    CHECK_FALSE(check_attention_support(flash, Device::cuda(0), DType::bf16, 64, 64, needs(scheme)).has_value());
  }
  // flash takes score and value terms only in kernel form.
  const auto dense = check_attention_support(flash, Device::cpu(), DType::f32, 4, 4,
                                             {.positions = {.score_terms = true}, .positional = "dense"});
  REQUIRE(dense.has_value());
  CHECK(*dense == "attention plugin 'flash' does not support position terms outside kernel form (positional plugin "
                  "'dense' gives its terms as tensors only) on cpu (it supports on cpu: f32, f64; head sizes any; "
                  "padding mask, causal, incremental, attention dropout, score expressions; positions: rotation, "
                  "score terms, value terms (kernel form))");
  const auto rope = check_attention_support(reg.find(PluginFamily::attention, "additive"), Device::cpu(), DType::f32, 4,
                                            4, needs("rope"));
  REQUIRE(rope.has_value());
  CHECK(rope->find("does not support position rotation (positional plugin 'rope' uses them)") != std::string::npos);
  // A plugin that declares no hooks (written before positions existed) serves none.
  PluginInfo old{.name = "old"};
  CHECK(check_attention_support(old, Device::cpu(), DType::f32, 4, 4, needs("relative"))
            ->find("position score terms, value terms (positional plugin 'relative' uses them)") != std::string::npos);
  CHECK_FALSE(check_attention_support(old, Device::cpu(), DType::f32, 4, 4, needs("sinusoidal")).has_value());
}
