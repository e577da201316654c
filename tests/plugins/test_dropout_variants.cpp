// The dropout variants that know their site: DropHead drops whole heads of the attention weights,
// token dropout whole token vectors of the embeddings, scheduled dropout follows the model's step.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "attnlab/init.h"
#include "attnlab/ops.h"
#include "attnlab/testing/gradcheck.h"
#include "support/plugin_testing.h"

using namespace attnlab;

namespace {

struct Variant {
  Generator init{1}, rng{7};
  std::int64_t step = 0;
  std::shared_ptr<Dropout> module;
};

std::unique_ptr<Variant> make(const std::string& name, double rate, DropoutSite site,
                              std::map<std::string, OptionValue> options = {}) {
  const Registry& reg = testing::in_tree_plugins().registry;
  auto v = std::make_unique<Variant>();
  BuildContext ctx;
  ctx.init = &v->init;
  ctx.dropout_rng = &v->rng;
  ctx.registry = &reg;
  ctx.dropout_plugin = name;
  ctx.dropout_options = std::move(options);
  ctx.training_step = &v->step;
  v->module = ctx.make_dropout(rate, site);
  v->module->train();
  return v;
}

}  // namespace

TEST_CASE("drophead zeroes whole heads of the attention weights and scales the rest by h / kept") {
  auto v = make("drophead", 0.4, DropoutSite::attention);
  const std::int64_t b = 16, h = 4, t = 3;
  const Tensor x = Tensor::full({b, h, t, t}, 1.0, DType::f64);
  const auto y = v->module->forward(x).to_vector<double>();
  std::int64_t dropped = 0;
  for (std::int64_t s = 0; s < b; ++s) {
    std::set<double> per_head;
    std::int64_t kept = 0;
    for (std::int64_t n = 0; n < h; ++n) {
      std::set<double> values;
      for (std::int64_t e = 0; e < t * t; ++e) values.insert(y[static_cast<std::size_t>((s * h + n) * t * t + e)]);
      REQUIRE(values.size() == 1);  // a head is dropped or kept as a whole
      per_head.insert(*values.begin());
      kept += *values.begin() != 0.0;
    }
    dropped += h - kept;
    if (kept > 0) CHECK(*per_head.rbegin() == doctest::Approx(static_cast<double>(h) / static_cast<double>(kept)));
  }
  CHECK(dropped > 0);
  CHECK(dropped < b * h);
  // Elsewhere it is element-wise: the elements of one [3, 3] block differ.
  auto residual = make("drophead", 0.4, DropoutSite::residual);
  const auto r = residual->module->forward(Tensor::full({1, 1, 8, 8}, 1.0, DType::f64)).to_vector<double>();
  CHECK(std::set<double>(r.begin(), r.end()).size() == 2);
}

TEST_CASE("token dropout drops whole token vectors at the embedding site") {
  auto v = make("token", 0.5, DropoutSite::embedding);
  const std::int64_t b = 4, t = 8, d = 6;
  const auto y = v->module->forward(Tensor::full({b, t, d}, 1.0, DType::f64)).to_vector<double>();
  std::int64_t dropped = 0;
  for (std::int64_t p = 0; p < b * t; ++p) {
    const std::set<double> values(y.begin() + p * d, y.begin() + (p + 1) * d);
    REQUIRE(values.size() == 1);
    CHECK((*values.begin() == 0.0 || *values.begin() == 2.0));
    dropped += *values.begin() == 0.0;
  }
  CHECK(dropped > 0);
  CHECK(dropped < b * t);
}

TEST_CASE("scheduled dropout ramps its rate with the model's training step") {
  auto rising = make("scheduled", 0.2, DropoutSite::residual, {{"steps", std::int64_t{100}}});
  CHECK(rising->module->rate() == 0.0);
  const Tensor x = Tensor::full({4, 4}, 1.0, DType::f64);
  CHECK(rising->module->forward(x).to_vector<double>() == x.to_vector<double>());  // nothing dropped at rate 0
  rising->step = 50;
  CHECK(rising->module->rate() == doctest::Approx(0.1));
  rising->step = 1000;
  CHECK(rising->module->rate() == doctest::Approx(0.2));
  auto early = make("scheduled", 0.2, DropoutSite::ffn,
                    {{"steps", std::int64_t{10}}, {"initial", 1.0}, {"final", 0.0}});
  CHECK(early->module->rate() == doctest::Approx(0.2));
  early->step = 5;
  CHECK(early->module->rate() == doctest::Approx(0.1));
  early->step = 10;
  CHECK(early->module->rate() == 0.0);
  CHECK_THROWS_WITH_AS(make("scheduled", 0.5, DropoutSite::ffn, {{"final", 2.0}}),
                       doctest::Contains("keep the rate 0.5 times them below 1"), Error);
}

TEST_CASE("the dropout variants pass a finite-difference gradient check with their mask held fixed") {
  struct Case {
    std::string name;
    DropoutSite site;
    Shape shape;
  };
  for (const Case& c : {Case{"drophead", DropoutSite::attention, Shape({2, 3, 2, 2})},
                        Case{"token", DropoutSite::embedding, Shape({2, 3, 4})},
                        Case{"scheduled", DropoutSite::residual, Shape({3, 4})}}) {
    INFO(c.name);
    auto v = make(c.name, 0.3, c.site, c.name == "scheduled" ? std::map<std::string, OptionValue>{{"initial", 1.0}}
                                                               : std::map<std::string, OptionValue>{});
    Generator g(5);
    const Tensor x = uniform(c.shape, -1.0, 1.0, g, DType::f64);
    auto r = attnlab::testing::gradcheck(
        [&](const std::vector<Tensor>& in) {
          v->rng.set_state(7, 0);  // the same mask on every evaluation
          return v->module->forward(in[0]);
        },
        {x});
    CHECK_MESSAGE(r.ok, r.message);
  }
}
