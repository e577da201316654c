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
  DropoutAddLayerNormInputs in = leaves(values);
  in.residual_scale = values.residual_scale;
  in.centered = values.centered;
  const Tensor y = dropout_add_layer_norm(in, p, 2024, 7, kEps);
  y.backward(dy);
  return collect(y, in);
}

// The same computation through the unfused ops.
Outcome run_unfused(const DropoutAddLayerNormInputs& values, double p, const Tensor& dy) {
  const DropoutAddLayerNormInputs in = leaves(values);
  const Tensor h = in.bias.defined() ? add(in.x, in.bias) : in.x;
  const Tensor r = values.residual_scale == 1.0 ? in.residual : scale(in.residual, values.residual_scale);
  const Tensor s = add(r, dropout(h, p, 2024, 7));
  const Tensor y = values.centered ? layer_norm(s, in.gamma, in.beta, kEps) : rms_norm(s, in.gamma, in.beta, kEps);
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

// The fused op against the unfused composition: the outputs and the gradients of x, residual,
// gamma and beta run the same arithmetic, so they are equal to the bit; the bias gradient is
// summed in double by the fused op (sum_rows, on the unfused path, adds in the dtype): equal to
// rounding.
void check_equals_composition(const Outcome& fused, const Outcome& unfused, DType dtype) {
  CHECK(fused.y == unfused.y);
  for (std::size_t k : {0u, 2u, 3u, 4u}) {
    CAPTURE(k);
    CHECK(fused.grads[k] == unfused.grads[k]);
  }
  check_close(fused.grads[1], unfused.grads[1], tolerance_for(dtype));
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
        check_equals_composition(fused, unfused, dtype);
      }
    }
  }
}

TEST_CASE("dropout_add_layer_norm with a residual scale (DeepNorm's alpha) equals scale then the composition") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (double alpha : {0.5, 1.8612097182041991}) {  // 1.861: DeepNorm's decoder alpha for 4 layers
      INFO("dtype ", dtype_name(dtype), " alpha ", alpha);
      DropoutAddLayerNormInputs in = make_inputs({3, 4, 37}, dtype, true, true, 41);
      in.residual_scale = alpha;
      const Tensor dy = random_tensor({3, 4, 37}, 42, -1.0, 1.0, dtype);
      const Outcome fused = run_fused(in, 0.3, dy);
      const Outcome unfused = run_unfused(in, 0.3, dy);
      check_equals_composition(fused, unfused, dtype);
      // Against 1: the scale is applied, and its gradient is alpha times the unscaled one's.
      in.residual_scale = 1.0;
      const Outcome plain = run_fused(in, 0.3, dy);
      CHECK(plain.y != fused.y);
    }
  }
  // Known values: with p = 0 and no affine parameters, y = layer_norm(a r + x).
  const Tensor x = Tensor::from_vector<double>({1, 3}, {1.0, 0.0, -1.0});
  const Tensor r = Tensor::from_vector<double>({1, 3}, {0.5, 1.0, 1.5});
  const Tensor y = dropout_add_layer_norm({.x = x, .residual = r, .residual_scale = 2.0}, 0.0, 1, 0, kEps);
  // a r + x = (2, 2, 2): every value the mean, so y = 0 (against 1 / sqrt(0 + eps) without the scale).
  CHECK_TENSOR_NEAR(y, std::vector<double>{0.0, 0.0, 0.0}, tolerance_for(DType::f64));
  const Tensor y2 = dropout_add_layer_norm({.x = x, .residual = r, .residual_scale = -2.0}, 0.0, 1, 0, 0.0);
  // a r + x = (0, -2, -4): mean -2, standard deviation sqrt(8 / 3).
  const double sd = std::sqrt(8.0 / 3.0);
  CHECK_TENSOR_NEAR(y2, std::vector<double>{2.0 / sd, 0.0, -2.0 / sd}, tolerance_for(DType::f64));
}

TEST_CASE("dropout_add_layer_norm not centred equals dropout then add then rms_norm") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int variant = 0; variant < 3; ++variant) {  // bias + affine, affine only, neither
      INFO("dtype ", dtype_name(dtype), " variant ", variant);
      DropoutAddLayerNormInputs in = make_inputs({4, 5, 37}, dtype, variant == 0, variant < 2, 51);
      in.centered = false;
      in.residual_scale = variant == 0 ? 1.5 : 1.0;
      const Tensor dy = random_tensor({4, 5, 37}, 52, -1.0, 1.0, dtype);
      const Outcome fused = run_fused(in, 0.3, dy);
      const Outcome unfused = run_unfused(in, 0.3, dy);
      check_equals_composition(fused, unfused, dtype);
    }
  }
  // Known values: p = 0, no affine: y = s / sqrt(mean(s^2) + eps) with s = r + x = (3, 4) * k.
  const Tensor x = Tensor::from_vector<double>({1, 2}, {2.0, 3.0});
  const Tensor r = Tensor::from_vector<double>({1, 2}, {1.0, 1.0});
  const Tensor y = dropout_add_layer_norm({.x = x, .residual = r, .centered = false}, 0.0, 1, 0, 0.0);
  const double rms = std::sqrt((9.0 + 16.0) / 2.0);
  CHECK_TENSOR_NEAR(y, std::vector<double>{3.0 / rms, 4.0 / rms}, tolerance_for(DType::f64));
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
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        return dropout_add_layer_norm(
            {.x = in[0], .bias = in[1], .residual = in[2], .gamma = in[3], .beta = in[4], .residual_scale = 1.7},
            0.3, 1234, 5);
      },
      {x, bias, residual, gamma, beta});
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        return dropout_add_layer_norm({.x = in[0], .residual = in[1], .gamma = in[2], .centered = false}, 0.3, 77, 2);
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
  CHECK_THROWS_WITH_AS(call({.x = x, .residual = x, .residual_scale = std::nan("")}),
                       doctest::Contains("dropout_add_layer_norm: residual_scale must be finite, got nan"), Error);
  CHECK(gen.offset() == 0);  // every input is checked before the generator is drawn from
}

namespace {

// The pair's outcome with gradients arriving at both outputs: loss = <sum, g_s> + <normed, dy>.
Outcome run_pair(const DropoutAddLayerNormInputs& values, double p, const Tensor& g_s, const Tensor& dy,
                 bool fused) {
  DropoutAddLayerNormInputs in = leaves(values);
  in.residual_scale = values.residual_scale;
  in.centered = values.centered;
  Tensor s, y;
  if (fused) {
    const DropoutAddNormPair pair = dropout_add_norm_pair(in, p, 2024, 7, kEps);
    s = pair.sum;
    y = pair.normed;
  } else {
    const Tensor h = in.bias.defined() ? add(in.x, in.bias) : in.x;
    const Tensor r = in.residual_scale == 1.0 ? in.residual : scale(in.residual, in.residual_scale);
    s = add(r, dropout(h, p, 2024, 7));
    y = in.centered ? layer_norm(s, in.gamma, in.beta, kEps) : rms_norm(s, in.gamma, in.beta, kEps);
  }
  const Tensor loss = add(sum(mul(s, g_s)), sum(mul(y, dy)));
  loss.backward();
  Outcome o = collect(y, in);
  const auto sv = s.to_vector<double>();
  o.y.insert(o.y.end(), sv.begin(), sv.end());
  return o;
}

}  // namespace

TEST_CASE("dropout_add_norm_pair equals dropout then add, and the norm of the sum, forward and backward") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (double p : {0.0, 0.3}) {
      for (bool centered : {true, false}) {
        INFO("dtype ", dtype_name(dtype), " p ", p, " centered ", centered);
        DropoutAddLayerNormInputs in = make_inputs({4, 5, 37}, dtype, true, true, 61);
        in.centered = centered;
        const Tensor g_s = random_tensor({4, 5, 37}, 62, -1.0, 1.0, dtype);
        const Tensor dy = random_tensor({4, 5, 37}, 63, -1.0, 1.0, dtype);
        const Outcome fused = run_pair(in, p, g_s, dy, true);
        const Outcome unfused = run_pair(in, p, g_s, dy, false);
        check_equals_composition(fused, unfused, dtype);  // y holds both outputs
      }
    }
  }
  // Known values: p = 0, no affine: sum = r + x, normed = layer_norm(sum).
  const Tensor x = Tensor::from_vector<double>({1, 2}, {2.0, 3.0});
  const Tensor r = Tensor::from_vector<double>({1, 2}, {1.0, -1.0});
  const DropoutAddNormPair pair = dropout_add_norm_pair({.x = x, .residual = r}, 0.0, 1, 0, 0.0);
  CHECK_TENSOR_NEAR(pair.sum, std::vector<double>{3.0, 2.0}, tolerance_for(DType::f64));
  CHECK_TENSOR_NEAR(pair.normed, std::vector<double>{1.0, -1.0}, tolerance_for(DType::f64));
}

TEST_CASE("dropout_add_norm_pair gradients through either output or both (finite differences)") {
  const Tensor x = random_tensor({3, 6}, 71, -2.0, 2.0), bias = random_tensor({6}, 72);
  const Tensor residual = random_tensor({3, 6}, 73), gamma = random_tensor({6}, 74, 0.5, 1.5);
  const Tensor beta = random_tensor({6}, 75);
  for (int which = 0; which < 3; ++which) {  // sum only, normed only, both
    CAPTURE(which);
    CHECK_GRADCHECK(
        [which](const std::vector<Tensor>& in) {
          const DropoutAddNormPair out = dropout_add_norm_pair(
              {.x = in[0], .bias = in[1], .residual = in[2], .gamma = in[3], .beta = in[4], .residual_scale = 1.3},
              0.3, 1234, 5);
          if (which == 0) return out.sum;
          if (which == 1) return out.normed;
          return add(scale(out.sum, 0.5), out.normed);
        },
        {x, bias, residual, gamma, beta});
  }
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        const DropoutAddNormPair out =
            dropout_add_norm_pair({.x = in[0], .residual = in[1], .gamma = in[2], .centered = false}, 0.5, 9, 1);
        return add(out.sum, out.normed);
      },
      {x, residual, gamma});
}

TEST_CASE("dropout_add_norm_pair draws as dropout does and refuses what the op refuses") {
  Generator a(5), b(5);
  const Tensor x = random_tensor({2, 8}, 81), r = random_tensor({2, 8}, 82);
  const DropoutAddNormPair pair = dropout_add_norm_pair({.x = x, .residual = r}, 0.4, a);
  CHECK(pair.sum.to_vector<double>() == add(r, dropout(x, 0.4, b)).to_vector<double>());
  CHECK(a.offset() == b.offset());
  Generator c(3);
  CHECK_THROWS_WITH_AS(dropout_add_norm_pair({.x = x, .residual = Tensor::zeros({2, 7})}, 0.1, c),
                       doctest::Contains("dropout_add_layer_norm: residual [2, 7] must have the shape of x [2, 8]"),
                       Error);
  CHECK(c.offset() == 0);
}
