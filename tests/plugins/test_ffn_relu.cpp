// The relu ffn plugin computes its first layer with linear_relu. Its parameters (names, shapes,
// initial values) are those of two nn::Linear layers as before, and on the CPU a few Adam steps
// give the same losses and weights, to the bit, as the same module computed with linear then relu.
#include <doctest/doctest.h>

#include <map>

#include "attnlab/attnlab.h"
#include "attnlab/nn/linear.h"
#include "attnlab/plugin/loader.h"
#include "attnlab/precision.h"
#include "support/tensor_testing.h"
#include "support/plugin_testing.h"

using namespace attnlab;

namespace {

Registry& plugins() {
  REQUIRE(testing::in_tree_plugins().failures.empty());
  return testing::in_tree_plugins().registry;
}

// One relu ffn module built from `seed`, its parameters by name, and its Adam state.
struct Ffn {
  Generator init, dropout;
  std::shared_ptr<FeedForward> module;
  std::map<std::string, Tensor> params;
  std::vector<Tensor> m, v;

  explicit Ffn(std::uint64_t seed) : init(seed), dropout(seed + 1) {
    BuildContext ctx;
    ctx.dims.d_model = 16;
    ctx.dims.d_ff = 40;
    ctx.dropout.ffn = 0.0;  // the paper's setting: the hidden dropout is the identity
    ctx.init = &init;
    ctx.dropout_rng = &dropout;
    ctx.registry = &plugins();
    module = plugins().make_ffn("relu", ctx);
    for (auto& [name, p] : module->named_parameters()) {
      params.emplace(name, p);
      m.push_back(Tensor::zeros(p.shape()));
      v.push_back(Tensor::zeros(p.shape()));
    }
  }

  // The paper's FFN written out with linear then relu, over this module's own parameters.
  Tensor unfused(const Tensor& x) const {
    return linear(relu(linear(x, params.at("w1.weight"), params.at("w1.bias"))), params.at("w2.weight"),
                  params.at("w2.bias"));
  }

  // One step on a squared error; returns the loss.
  double step(const Tensor& x, const Tensor& target, bool fused, std::int64_t t) {
    module->zero_grad();
    const Tensor y = fused ? module->forward(x) : unfused(x);
    const Tensor d = sub(y, target);
    const Tensor loss = mean(mul(d, d));
    loss.backward();
    std::size_t i = 0;
    for (auto& [name, p] : module->named_parameters()) {
      Tensor param = p;
      adam_step(param, p.grad(), m[i], v[i], AdamHyper{.lr = 1e-2, .step = t});
      ++i;
    }
    return loss.to_vector<double>()[0];
  }
};

}  // namespace

TEST_CASE("ffn relu keeps the parameters of two linear layers") {
  Ffn ffn(5);
  CHECK(ffn.params.size() == 4);
  CHECK(ffn.params.at("w1.weight").shape() == Shape{40, 16});
  CHECK(ffn.params.at("w1.bias").shape() == Shape{40});
  CHECK(ffn.params.at("w2.weight").shape() == Shape{16, 40});
  CHECK(ffn.params.at("w2.bias").shape() == Shape{16});
  // The initial values are two nn::Linear's drawn in order from the same generator.
  Generator init(5);
  const nn::Linear w1(16, 40, true, init), w2(40, 16, true, init);
  CHECK_TENSOR_NEAR(ffn.params.at("w1.weight"), w1.weight(), testing::Tolerance{0.0, 0.0});
  CHECK_TENSOR_NEAR(ffn.params.at("w2.weight"), w2.weight(), testing::Tolerance{0.0, 0.0});
}

TEST_CASE("ffn relu with linear_relu trains to the same losses as linear then relu on the cpu") {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision_name(precision));
    const PrecisionGuard guard(precision);
    Ffn fused(11), unfused(11);
    const Tensor x = testing::random_tensor({4, 6, 16}, 12);
    const Tensor target = testing::random_tensor({4, 6, 16}, 13);
    for (std::int64_t t = 1; t <= 5; ++t) {
      CAPTURE(t);
      const double a = fused.step(x, target, true, t);
      const double b = unfused.step(x, target, false, t);
      CHECK(a == b);
    }
    for (const auto& param : fused.params) {
      const std::string& name = param.first;  // (clang < 16 cannot capture structured bindings)
      CAPTURE(name);
      CHECK_TENSOR_NEAR(param.second, unfused.params.at(name), testing::Tolerance{0.0, 0.0});
    }
  }
}
