#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/error.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/ops.h"
#include "attnlab/precision.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

TEST_CASE("the learning rate warms up linearly then decays with the inverse square root") {
  const double peak = std::pow(512.0, -0.5) * std::pow(4000.0, -0.5);
  CHECK(transformer_lr(4000, 512, 4000) == doctest::Approx(peak));
  CHECK(transformer_lr(1, 512, 4000) == doctest::Approx(std::pow(512.0, -0.5) * std::pow(4000.0, -1.5)));
  CHECK(transformer_lr(2000, 512, 4000) == doctest::Approx(peak / 2));
  CHECK(transformer_lr(16000, 512, 4000) == doctest::Approx(peak / 2));
  CHECK(transformer_lr(16000, 512, 4000, 2.0) == doctest::Approx(peak));
  CHECK_THROWS_AS(transformer_lr(0, 512, 4000), Error);
}

TEST_CASE("the optimizer updates parameters with gradients and restores its state") {
  Tensor a = Tensor::full({2}, 1.0, DType::f64), b = Tensor::full({3}, 1.0, DType::f64);
  a.set_requires_grad();
  b.set_requires_grad();
  AdamOptimizer opt({{"a", a}, {"b", b}}, {});
  a.set_grad(Tensor::full({2}, 0.5, DType::f64));
  opt.step(0.1);
  CHECK(opt.steps() == 1);
  CHECK(a.to_vector<double>()[0] == doctest::Approx(0.9).epsilon(1e-6));
  CHECK(b.to_vector<double>()[0] == 1.0);  // no gradient: untouched

  AdamOptimizer copy({{"a", a.detach()}, {"b", b.detach()}}, {});
  copy.load_state(opt.first_moments(), opt.second_moments(), opt.steps());
  CHECK(copy.steps() == 1);
  CHECK(copy.first_moments()[0].second.to_vector<double>() == opt.first_moments()[0].second.to_vector<double>());
  AdamOptimizer::Named wrong = {{"a", Tensor::zeros({2}, DType::f64)}, {"b", Tensor::zeros({4}, DType::f64)}};
  CHECK_THROWS_WITH_AS(copy.load_state(wrong, wrong, 3), doctest::Contains("'b' [4] does not match parameter 'b' [3]"),
                       Error);
  CHECK(copy.steps() == 1);
}

TEST_CASE("AdamW decays the matrices and the embedding, never biases, norms or excluded names") {
  const NamedTensors params = {{"embedding", Tensor::zeros({10, 4})},
                               {"encoder.layers.0.self_attn.q.weight", Tensor::zeros({4, 4})},
                               {"encoder.layers.0.self_attn.q.bias", Tensor::zeros({4})},
                               {"encoder.layers.0.norm1.weight", Tensor::zeros({4})},
                               {"decoder.layers.0.ffn.w1.weight", Tensor::zeros({8, 4})}};
  CHECK(weight_decay_mask(params, {}) == std::vector<bool>{true, true, false, false, true});
  CHECK(weight_decay_mask(params, {"embedding", "ffn"}) == std::vector<bool>{false, true, false, false, false});
}

TEST_CASE("AdamW shrinks only the decayed parameters; Adam with decay flags does not") {
  for (const double wd : {0.0, 0.5}) {
    CAPTURE(wd);
    Tensor w = Tensor::full({2, 2}, 1.0, DType::f64), b = Tensor::full({2}, 1.0, DType::f64);
    AdamOptimizer opt({{"w", w}, {"b", b}}, {.weight_decay = wd}, {true, false});
    w.set_grad(Tensor::zeros({2, 2}, DType::f64));  // zero gradients: only the decay moves a parameter
    b.set_grad(Tensor::zeros({2}, DType::f64));
    opt.step(0.1);
    CHECK(w.to_vector<double>()[0] == doctest::Approx(1.0 - 0.1 * wd).epsilon(1e-14));
    CHECK(b.to_vector<double>()[0] == 1.0);
  }
  Tensor w = Tensor::zeros({2, 2});
  CHECK_THROWS_WITH_AS(AdamOptimizer({{"w", w}}, {}, {true, false}),
                       doctest::Contains("2 weight-decay flags for 1 parameters"), Error);
}

TEST_CASE("the gradient norm covers every parameter's gradient and clipping scales as PyTorch's") {
  Tensor a = Tensor::zeros({2}, DType::f64), b = Tensor::zeros({1, 2}), c = Tensor::zeros({3});
  a.set_grad(Tensor::from_vector<double>({2}, {3.0, 0.0}));
  b.set_grad(Tensor::from_vector<float>({1, 2}, {0.0f, 4.0f}));  // f32 and f64 gradients together
  // c has no gradient: it counts as zero
  CHECK(gradient_norm({{"a", a}, {"b", b}, {"c", c}}) == doctest::Approx(5.0).epsilon(1e-12));
  const Tensor squares = gradient_squares({{"a", a}, {"b", b}, {"c", c}});
  CHECK(squares.shape() == Shape{});
  CHECK(squares.dtype() == DType::f64);
  CHECK(squares.item() == 25.0);
  CHECK(gradient_squares({{"c", c}}).item() == 0.0);  // no gradient at all
  CHECK(clip_factor(5.0, 0.0) == 1.0);   // off
  CHECK(clip_factor(5.0, 10.0) == 1.0);  // below the threshold: unchanged
  CHECK(clip_factor(5.0, 1.0) == doctest::Approx(1.0 / (5.0 + 1e-6)));
}

TEST_CASE("the optimizer's step with clipping's factor as a tensor equals the factor as a number") {
  const auto make = [](std::uint64_t seed) {
    Tensor w = testing::random_tensor({4, 3}, seed, -1.0, 1.0), b = testing::random_tensor({3}, seed + 1, -1.0, 1.0);
    w.set_grad(testing::random_tensor({4, 3}, seed + 2, -2.0, 2.0));
    b.set_grad(testing::random_tensor({3}, seed + 3, -2.0, 2.0));
    return NamedTensors{{"w", w}, {"b", b}};
  };
  NamedTensors by_number = make(7), by_tensor = make(7);
  AdamOptimizer a(by_number, {}), b(by_tensor, {});
  const GradientClip clip = gradient_clip(gradient_squares(by_tensor), 0.5);
  REQUIRE(clip.factor.item() < 1.0);  // the gradients are well above 0.5: clipping acts
  a.step(1e-2, clip_factor(gradient_norm(by_number), 0.5));
  b.step(1e-2, 1.0, clip.factor);
  for (std::size_t i = 0; i < by_number.size(); ++i)
    CHECK(by_tensor[i].second.to_vector<float>() == by_number[i].second.to_vector<float>());
}

TEST_CASE("the optimizer's bf16 copies reach a forward only after a step has written them") {
  const PrecisionGuard bf16(Precision::bf16);
  Tensor w = testing::random_tensor({4, 6}, 5, -1.0, 1.0, DType::f32).set_requires_grad();
  Tensor b = Tensor::zeros({4}).set_requires_grad();  // rank 1: no copy
  const Tensor x = testing::random_tensor({3, 6}, 6, -1.0, 1.0, DType::f32);
  AdamOptimizer opt({{"w", w}, {"b", b}}, {});
  opt.keep_bf16_copies(true);
  // One forward in a scope fed by the optimizer: how many operands came from its copies, and the
  // output's bits against the same forward without the scope.
  const auto provided = [&] {
    Bf16Operands operands;
    opt.provide_bf16_copies(operands);
    const std::vector<float> got = linear(x, w, b).to_vector<float>();
    const auto counts = operands.counts();
    CHECK(got == linear(x, w.detach(), b.detach()).to_vector<float>());
    return counts.provided;
  };
  const auto train_step = [&] {
    sum(linear(x, w, b)).backward();
    opt.step(0.01);
    opt.zero_grad();
  };
  CHECK(provided() == 0);  // nothing written yet
  train_step();
  CHECK(provided() == 1);
  train_step();
  CHECK(provided() == 1);  // rewritten by each step: the values above still match
  opt.forget_bf16_copies();
  CHECK(provided() == 0);
  train_step();
  CHECK(provided() == 1);
  opt.load_state(opt.first_moments(), opt.second_moments(), opt.steps());  // restored parameters
  CHECK(provided() == 0);
  opt.keep_bf16_copies(false);
  train_step();
  CHECK(provided() == 0);
}
