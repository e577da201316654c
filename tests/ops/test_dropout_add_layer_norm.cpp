#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::ThreadCountGuard;
using testing::tolerance_for;

namespace {

constexpr double kEps = 1e-5;

// The five inputs as leaves that require gradients (bias, gamma, beta optional).
DropoutAddLayerNormInputs make_inputs(const Shape& shape, DType dtype, bool bias, bool affine, std::uint64_t seed) {
  const Shape vec{shape[-1]};
  DropoutAddLayerNormInputs in;
  in.x = random_tensor(shape, seed, -2.0, 2.0, dtype);
  in.residual = random_tensor(shape, seed + 1, -1.0, 1.0, dtype);
  if (bias) in.bias = random_tensor(vec, seed + 2, -0.5, 0.5, dtype);
  if (affine) {
    in.gamma = random_tensor(vec, seed + 3, 0.5, 1.5, dtype);
    in.beta = random_tensor(vec, seed + 4, -0.5, 0.5, dtype);
  }
  return in;
}

// Fresh leaves with the same values, so that two runs accumulate separate gradients.
DropoutAddLayerNormInputs leaves(const DropoutAddLayerNormInputs& in) {
  DropoutAddLayerNormInputs out;
  for (auto [from, to] : {std::pair{&in.x, &out.x}, {&in.bias, &out.bias}, {&in.residual, &out.residual},
                          {&in.gamma, &out.gamma}, {&in.beta, &out.beta}}) {
    if (!from->defined()) continue;
    *to = from->clone();
    to->set_requires_grad();
  }
  return out;
}

struct Outcome {
  std::vector<double> y;
  std::vector<std::vector<double>> grads;  // x, bias, residual, gamma, beta (empty where undefined)
};

Outcome collect(const Tensor& y, const DropoutAddLayerNormInputs& in) {
  Outcome o{y.to_vector<double>(), {}};
  for (const Tensor* t : {&in.x, &in.bias, &in.residual, &in.gamma, &in.beta})
    o.grads.push_back(t->defined() ? t->grad().to_vector<double>() : std::vector<double>{});
  return o;
}

Outcome run_fused(const DropoutAddLayerNormInputs& values, double p, const Tensor& dy) {
  const DropoutAddLayerNormInputs in = leaves(values);
  const Tensor y = dropout_add_layer_norm(in, p, 2024, 7, kEps);
  y.backward(dy);
  return collect(y, in);
}

// The same computation through the unfused ops.
Outcome run_unfused(const DropoutAddLayerNormInputs& values, double p, const Tensor& dy) {
  const DropoutAddLayerNormInputs in = leaves(values);
  const Tensor h = in.bias.defined() ? add(in.x, in.bias) : in.x;
  const Tensor y = layer_norm(add(in.residual, dropout(h, p, 2024, 7)), in.gamma, in.beta, kEps);
  y.backward(dy);
  return collect(y, in);
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, testing::Tolerance tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::abs(got[i] - want[i]) <= tol.abs + tol.rel * std::abs(want[i]));
  }
}

}  // namespace

TEST_CASE("dropout_add_layer_norm known values with the mask drawn from philox_uniform") {
  // y = layer_norm(r + keep * (x + b) / (1 - p)) written out in double, row by row.
  const std::int64_t rows = 3, d = 6;
  const double p = 0.5;
  DropoutAddLayerNormInputs in = make_inputs({rows, d}, DType::f64, true, true, 3);
  const Tensor y = dropout_add_layer_norm(in, p, 11, 3, kEps);
  const auto x = in.x.to_vector<double>(), r = in.residual.to_vector<double>();
  const auto b = in.bias.to_vector<double>(), g = in.gamma.to_vector<double>(), be = in.beta.to_vector<double>();
  std::vector<double> want(static_cast<std::size_t>(rows * d));
  int dropped = 0;
  for (std::int64_t row = 0; row < rows; ++row) {
    std::vector<double> s(static_cast<std::size_t>(d));
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < d; ++j) {
      const auto i = static_cast<std::size_t>(row * d + j);
      const bool keep = philox_uniform(11, 3, i) >= p;
      dropped += keep ? 0 : 1;
      s[static_cast<std::size_t>(j)] = r[i] + (keep ? (x[i] + b[static_cast<std::size_t>(j)]) / (1 - p) : 0.0);
      mean += s[static_cast<std::size_t>(j)] / static_cast<double>(d);
    }
    for (double v : s) var += (v - mean) * (v - mean) / static_cast<double>(d);
    for (std::int64_t j = 0; j < d; ++j) {
      const auto k = static_cast<std::size_t>(j);
      want[static_cast<std::size_t>(row * d + j)] = (s[k] - mean) / std::sqrt(var + kEps) * g[k] + be[k];
    }
  }
  REQUIRE(dropped > 0);
  REQUIRE(dropped < rows * d);
  CHECK_TENSOR_NEAR(y, want, tolerance_for(DType::f64));
}

TEST_CASE("dropout_add_layer_norm equals dropout then add then layer_norm forward and backward") {
  // d = 37 is not a multiple of 4, so rows start inside Philox blocks.
  for (DType dtype : {DType::f32, DType::f64}) {
    for (double p : {0.0, 0.3}) {
      for (int variant = 0; variant < 3; ++variant) {  // bias + affine, affine only, neither
        INFO("dtype ", dtype_name(dtype), " p ", p, " variant ", variant);
        const DropoutAddLayerNormInputs in = make_inputs({4, 5, 37}, dtype, variant == 0, variant < 2, 17);
        const Tensor dy = random_tensor({4, 5, 37}, 18, -1.0, 1.0, dtype);
        const Outcome fused = run_fused(in, p, dy);
        const Outcome unfused = run_unfused(in, p, dy);
        // The forward and the gradients of x, residual, gamma and beta run the same arithmetic as
        // the unfused ops: equal to the bit. The bias gradient is summed in double (sum_rows, on
        // the unfused path, adds in the dtype): equal to rounding.
        CHECK(fused.y == unfused.y);
        for (std::size_t k : {0u, 2u, 3u, 4u}) {
          CAPTURE(k);
          CHECK(fused.grads[k] == unfused.grads[k]);
        }
        check_close(fused.grads[1], unfused.grads[1], tolerance_for(dtype));
      }
    }
  }
}

TEST_CASE("dropout_add_layer_norm gradients with dropout (finite differences)") {
  // The mask is a constant of (seed, offset), so the op is smooth in every input.
  const Tensor x = random_tensor({3, 6}, 31, -2.0, 2.0), bias = random_tensor({6}, 32);
  const Tensor residual = random_tensor({3, 6}, 33), gamma = random_tensor({6}, 34, 0.5, 1.5);
  const Tensor beta = random_tensor({6}, 35);
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        return dropout_add_layer_norm({.x = in[0], .bias = in[1], .residual = in[2], .gamma = in[3], .beta = in[4]},
                                      0.3, 1234, 5);
      },
      {x, bias, residual, gamma, beta});
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        return dropout_add_layer_norm({.x = in[0], .residual = in[1]}, 0.5, 99, 0, 1e-3);
      },
      {random_tensor({2, 2, 5}, 36), random_tensor({2, 2, 5}, 37)});
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        return dropout_add_layer_norm({.x = in[0], .residual = in[1], .gamma = in[2]}, 0.0, 1, 0);
      },
      {x, residual, gamma});
}

TEST_CASE("dropout_add_layer_norm does not depend on the thread count") {
  ThreadCountGuard guard;
  // 64 rows of 1030: above the parallel grains of the row and column loops.
  const DropoutAddLayerNormInputs in = make_inputs({64, 1030}, DType::f32, true, true, 41);
  const Tensor dy = random_tensor({64, 1030}, 42, -1.0, 1.0);
  set_num_threads(1);
  const Outcome one = run_fused(in, 0.2, dy);
  for (int threads : {2, 4}) {
    set_num_threads(threads);
    CAPTURE(threads);
    const Outcome many = run_fused(in, 0.2, dy);
    CHECK(many.y == one.y);
    for (std::size_t k = 0; k < 5; ++k) CHECK(many.grads[k] == one.grads[k]);
  }
}

TEST_CASE("dropout_add_layer_norm without gradients normalizes in place to the same values") {
  const DropoutAddLayerNormInputs in = make_inputs({6, 10}, DType::f32, true, true, 51);
  const auto with_grad = dropout_add_layer_norm(leaves(in), 0.25, 5, 1).to_vector<float>();
  NoGradGuard no_grad;
  CHECK(dropout_add_layer_norm(in, 0.25, 5, 1).to_vector<float>() == with_grad);
}

TEST_CASE("dropout_add_layer_norm with a generator draws as dropout does") {
  const DropoutAddLayerNormInputs in = make_inputs({3, 10}, DType::f32, true, false, 61);
  Generator fused_gen(9), plain_gen(9);
  for (double p : {0.4, 0.0}) {  // p == 0 advances the stream too
    CAPTURE(p);
    const auto fused = dropout_add_layer_norm(in, p, fused_gen).to_vector<float>();
    const Tensor plain = layer_norm(add(in.residual, dropout(add(in.x, in.bias), p, plain_gen)), Tensor(), Tensor());
    CHECK(fused == plain.to_vector<float>());
    CHECK(fused_gen.offset() == plain_gen.offset());
  }
  CHECK(fused_gen.offset() == 16);  // two draws of ceil(30 / 4) blocks
}

TEST_CASE("dropout_add_layer_norm errors name the op and lose nothing") {
  const Tensor x = Tensor::zeros({2, 4});
  Generator gen(3);
  auto call = [&](const DropoutAddLayerNormInputs& in, double p = 0.1) { dropout_add_layer_norm(in, p, gen); };
  CHECK_THROWS_WITH_AS(call({.x = x, .residual = Tensor::zeros({2, 5})}),
                       doctest::Contains("dropout_add_layer_norm: residual [2, 5] must have the shape of x [2, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(call({.x = x, .bias = Tensor::zeros({2}), .residual = x}),
                       doctest::Contains("dropout_add_layer_norm: bias must have shape [4] (the last axis of x "
                                         "[2, 4]), got [2]"),
                       Error);
  CHECK_THROWS_WITH_AS(call({.x = x, .residual = x, .gamma = Tensor::zeros({4}, DType::f64)}),
                       doctest::Contains("dropout_add_layer_norm: gamma dtype differs from x"), Error);
  CHECK_THROWS_WITH_AS(call({.x = x, .residual = x}, 1.0),
                       doctest::Contains("dropout_add_layer_norm: p must be in [0, 1), got p = 1"), Error);
  CHECK_THROWS_WITH_AS(call({.x = x}), doctest::Contains("dropout_add_layer_norm: residual is undefined"), Error);
  CHECK_THROWS_WITH_AS(call({.x = Tensor::zeros({2, 4}, DType::bf16), .residual = Tensor::zeros({2, 4}, DType::bf16)}),
                       doctest::Contains("dropout_add_layer_norm: dtype bf16 is not supported (f32, f64)"), Error);
  CHECK_THROWS_WITH_AS(dropout_add_layer_norm({.x = x, .residual = x}, 0.1, 1, 0, -1.0),
                       doctest::Contains("dropout_add_layer_norm: eps must be finite and >= 0, got -1"), Error);
  CHECK_THROWS_WITH_AS(call({.x = Tensor::zeros({2, 4}, DType::i32), .residual = Tensor::zeros({2, 4}, DType::i32)}),
                       doctest::Contains("dropout_add_layer_norm: dtype i32 is not supported (f32, f64)"), Error);
  CHECK(gen.offset() == 0);  // every input is checked before the generator is drawn from
}
