#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/autograd.h"
#include "attnlab/ops.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;
using nmt::testing::plugins;
using nmt::testing::tiny_config;

namespace {

Tensor ids(const Shape& shape, const std::vector<std::int64_t>& values) {
  return Tensor::from_vector<std::int64_t>(shape, values);
}

}  // namespace

TEST_CASE("the parameter count of a built model equals the formula") {
  for (auto positional : {"sinusoidal", "none"}) {
    TransformerConfig c = tiny_config(13);
    c.encoder_layers = 2;
    c.decoder_layers = 3;
    c.positional.name = positional;
    Generator init(1), drop(2);
    Transformer model(c, plugins(), init, drop);
    CHECK(model.parameter_count() == expected_parameter_count(c));
  }
}

TEST_CASE("the base model has about the paper's 65M parameters") {
  // 37000 shared wordpieces: embedding 18.94M + encoder 18.91M + decoder 25.22M = 63.08M. The
  // paper rounds to 65M; its exact vocabulary size and bias layout are not stated.
  const std::int64_t n = expected_parameter_count(paper_base_config(37000));
  CHECK(n == 63082496);
  CHECK(std::abs(static_cast<double>(n) / 65e6 - 1.0) < 0.04);
}

TEST_CASE("teacher-forced logits have the right shape and do not see later targets") {
  Generator init(3), drop(4);
  Transformer model(tiny_config(), plugins(), init, drop);
  model.eval();
  Tensor src = ids({2, 5}, {4, 5, 6, 7, 3, 8, 9, 3, 0, 0});
  Tensor tgt = ids({2, 4}, {2, 4, 5, 6, 2, 7, 8, 9});
  Tensor logits = model.forward(src, tgt);
  CHECK(logits.shape() == Shape({2, 4, 11}));
  Tensor changed = ids({2, 4}, {2, 4, 10, 10, 2, 7, 10, 10});
  auto a = split(model.forward(src, tgt), 1, {2, 2})[0].to_vector<double>();
  auto b = split(model.forward(src, changed), 1, {2, 2})[0].to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == doctest::Approx(b[i]).epsilon(1e-6));
}

TEST_CASE("padding in the source changes nothing but the padded positions") {
  Generator init(3), drop(4);
  Transformer model(tiny_config(), plugins(), init, drop);
  model.eval();
  Tensor tgt = ids({1, 3}, {2, 4, 5});
  Tensor short_src = ids({1, 3}, {6, 7, 3});
  Tensor padded_src = ids({1, 5}, {6, 7, 3, 0, 0});
  const auto a = model.forward(short_src, tgt).to_vector<double>();
  const auto b = model.forward(padded_src, tgt).to_vector<double>();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
}

TEST_CASE("incremental decoding gives the same logits as full decoding") {
  Generator init(5), drop(6);
  Transformer model(tiny_config(), plugins(), init, drop);
  model.eval();
  Tensor src = ids({2, 4}, {4, 5, 6, 3, 7, 8, 3, 0});
  Tensor tgt = ids({2, 5}, {2, 4, 5, 6, 7, 2, 8, 9, 10, 4});
  NoGradGuard no_grad;
  const auto full = model.forward(src, tgt).to_vector<double>();
  Encoded enc = model.encode(src);
  DecoderState state = model.start_decoding();
  std::vector<Tensor> steps;
  const auto columns = split(tgt, 1, {1, 1, 1, 1, 1});
  for (const Tensor& step : columns) steps.push_back(model.project(model.decode(step, enc, &state)));
  const auto inc = concat(steps, 1).to_vector<double>();
  REQUIRE(inc.size() == full.size());
  for (std::size_t i = 0; i < inc.size(); ++i) CHECK(inc[i] == doctest::Approx(full[i]).epsilon(1e-5));
}

TEST_CASE("the whole model passes a finite-difference gradient check") {
  TransformerConfig c = tiny_config(7);
  nmt::testing::check_small_model_gradients(c);
}
