#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/attnlab.h"
#include "support/tensor_testing.h"

using namespace attnlab;

// The update written out longhand, the textbook way (bias-corrected moments), for comparison.
TEST_CASE("adam_step matches the textbook update over several steps") {
  const std::vector<double> p0 = {0.5, -1.0, 2.0}, grads[3] = {{0.1, -0.2, 0.3}, {0.05, 0.4, -0.1}, {-0.3, 0.0, 0.2}};
  Tensor p = Tensor::from_vector<double>({3}, p0);
  Tensor m = Tensor::zeros({3}, DType::f64), v = Tensor::zeros({3}, DType::f64);
  std::vector<double> ep = p0, em(3, 0.0), ev(3, 0.0);
  const double lr = 0.01, b1 = 0.9, b2 = 0.98, eps = 1e-9;
  for (int t = 1; t <= 3; ++t) {
    const auto& g = grads[t - 1];
    adam_step(p, Tensor::from_vector<double>({3}, g), m, v, {lr, b1, b2, eps, t});
    for (int i = 0; i < 3; ++i) {
      em[i] = b1 * em[i] + (1 - b1) * g[i];
      ev[i] = b2 * ev[i] + (1 - b2) * g[i] * g[i];
      const double mh = em[i] / (1 - std::pow(b1, t)), vh = ev[i] / (1 - std::pow(b2, t));
      ep[i] -= lr * mh / (std::sqrt(vh) + eps);
    }
  }
  CHECK_TENSOR_NEAR(p, ep, testing::Tolerance{1e-12, 1e-12});
  CHECK_TENSOR_NEAR(m, em, testing::Tolerance{1e-15, 1e-12});
  CHECK_TENSOR_NEAR(v, ev, testing::Tolerance{1e-15, 1e-12});
  // The first step moves every coordinate with a non-zero gradient by about lr (sign of -g).
  Tensor q = Tensor::from_vector<double>({1}, {0.0}), qm = Tensor::zeros({1}, DType::f64), qv = Tensor::zeros({1}, DType::f64);
  adam_step(q, Tensor::from_vector<double>({1}, {3.0}), qm, qv, {lr, b1, b2, eps, 1});
  CHECK(q.item() == doctest::Approx(-lr).epsilon(1e-6));
}

// AdamW (Loshchilov & Hutter 2019, as torch.optim.AdamW): the parameter shrinks by lr * weight_decay
// of itself, apart from the gradient's moments; the gradient scale multiplies the gradient first.
TEST_CASE("adam_step with weight decay and a gradient scale matches the textbook AdamW update") {
  const std::vector<double> p0 = {0.5, -1.0, 2.0, 0.0}, grads[3] = {{0.1, -0.2, 0.3, 0.0}, {0.05, 0.4, -0.1, 0.0},
                                                                    {-0.3, 0.0, 0.2, 0.0}};
  const double lr = 0.01, b1 = 0.9, b2 = 0.98, eps = 1e-9, wd = 0.1, gs = 0.5;
  Tensor p = Tensor::from_vector<double>({4}, p0);
  Tensor m = Tensor::zeros({4}, DType::f64), v = Tensor::zeros({4}, DType::f64);
  std::vector<double> ep = p0, em(4, 0.0), ev(4, 0.0);
  for (int t = 1; t <= 3; ++t) {
    const auto& g = grads[t - 1];
    adam_step(p, Tensor::from_vector<double>({4}, g), m, v,
              {.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .step = t, .weight_decay = wd, .grad_scale = gs});
    for (int i = 0; i < 4; ++i) {
      const double gi = gs * g[i];
      em[i] = b1 * em[i] + (1 - b1) * gi;
      ev[i] = b2 * ev[i] + (1 - b2) * gi * gi;
      const double mh = em[i] / (1 - std::pow(b1, t)), vh = ev[i] / (1 - std::pow(b2, t));
      ep[i] = ep[i] * (1 - lr * wd) - lr * mh / (std::sqrt(vh) + eps);
    }
  }
  CHECK_TENSOR_NEAR(p, ep, testing::Tolerance{1e-12, 1e-12});
  CHECK_TENSOR_NEAR(m, em, testing::Tolerance{1e-15, 1e-12});
  CHECK_TENSOR_NEAR(v, ev, testing::Tolerance{1e-15, 1e-12});
  // A parameter whose gradients are all zero only decays: by the factor 1 - lr wd per step.
  Tensor q = Tensor::from_vector<double>({1}, {2.0}), qm = Tensor::zeros({1}, DType::f64), qv = Tensor::zeros({1}, DType::f64);
  for (int t = 1; t <= 3; ++t)
    adam_step(q, Tensor::from_vector<double>({1}, {0.0}), qm, qv, {.lr = lr, .step = t, .weight_decay = wd});
  CHECK(q.item() == doctest::Approx(2.0 * std::pow(1 - lr * wd, 3)).epsilon(1e-14));
}

TEST_CASE("adam_step with grad_scale s equals adam_step on s times the gradient, to the bit") {
  // 0.5 scales exactly, so both paths see the same gradient values.
  Tensor p1 = testing::random_tensor({257}, 1, -1.0, 1.0), p2 = p1.clone();
  Tensor m1 = Tensor::zeros({257}), v1 = Tensor::zeros({257}), m2 = Tensor::zeros({257}), v2 = Tensor::zeros({257});
  const Tensor g = testing::random_tensor({257}, 2, -1.0, 1.0);
  const Tensor half = Tensor::from_vector<float>({257}, std::vector<float>(257, 0.5f));
  for (std::int64_t t = 1; t <= 2; ++t) {
    adam_step(p1, g, m1, v1, {.lr = 0.01, .step = t, .grad_scale = 0.5});
    adam_step(p2, mul(g, half), m2, v2, {.lr = 0.01, .step = t});
  }
  CHECK(p1.to_vector<float>() == p2.to_vector<float>());
  CHECK(v1.to_vector<float>() == v2.to_vector<float>());
}

TEST_CASE("adam_step names mismatched shapes and bad hyperparameters") {
  Tensor p = Tensor::zeros({3}), m = Tensor::zeros({3}), v = Tensor::zeros({3});
  CHECK_THROWS_WITH_AS(adam_step(p, Tensor::zeros({4}), m, v, {}), doctest::Contains("shapes differ: [3] and [4]"), Error);
  CHECK_THROWS_WITH_AS(adam_step(p, Tensor::zeros({3}), m, v, {.step = 0}), doctest::Contains("step must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(adam_step(p, Tensor::zeros({3}), m, v, {.lr = 0.1, .weight_decay = 10.0}),
                       doctest::Contains("lr * weight_decay < 1, got 10 at lr 0.1"), Error);
  CHECK_THROWS_WITH_AS(adam_step(p, Tensor::zeros({3}), m, v, {.weight_decay = -1.0}),
                       doctest::Contains("weight_decay must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(adam_step(p, Tensor::zeros({3}), m, v, {.grad_scale = 0.0}),
                       doctest::Contains("grad_scale must be finite and > 0, got 0"), Error);
}

namespace {

// Entries of mixed sizes: empty, one element, small, and larger than the parallel grain (so that
// thread chunks span several entries).
const std::vector<Shape> kMixedShapes = {{0}, {1}, {3, 5}, {70001}, {2, 0, 4}, {1}, {40000}, {7}};

struct AdamState {
  std::vector<Tensor> p, g, m, v;
};

AdamState make_state(const std::vector<Shape>& shapes, DType dtype, std::uint64_t seed) {
  AdamState s;
  for (const Shape& shape : shapes) {
    s.p.push_back(testing::random_tensor(shape, seed++, -1.0, 1.0, dtype));
    s.g.push_back(testing::random_tensor(shape, seed++, -0.5, 0.5, dtype));
    s.m.push_back(testing::random_tensor(shape, seed++, -0.1, 0.1, dtype));
    s.v.push_back(testing::random_tensor(shape, seed++, 0.0, 0.1, dtype));
  }
  return s;
}

AdamState copy_state(const AdamState& s) {
  AdamState c;
  for (std::size_t i = 0; i < s.p.size(); ++i) {
    c.p.push_back(s.p[i].clone());
    c.g.push_back(s.g[i].clone());
    c.m.push_back(s.m[i].clone());
    c.v.push_back(s.v[i].clone());
  }
  return c;
}

}  // namespace

TEST_CASE("adam_step_multi equals adam_step on each tensor to the bit") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype ", dtype_name(dtype));
    AdamState multi = make_state(kMixedShapes, dtype, 100);
    AdamState single = copy_state(multi);
    for (std::int64_t t = 1; t <= 3; ++t) {
      const AdamHyper h{.lr = 0.01 * static_cast<double>(t), .step = t};
      adam_step_multi(multi.p, multi.g, multi.m, multi.v, h);
      for (std::size_t i = 0; i < single.p.size(); ++i)
        adam_step(single.p[i], single.g[i], single.m[i], single.v[i], h);
    }
    for (std::size_t i = 0; i < multi.p.size(); ++i) {
      CAPTURE(i);
      CHECK(multi.p[i].to_vector<double>() == single.p[i].to_vector<double>());
      CHECK(multi.m[i].to_vector<double>() == single.m[i].to_vector<double>());
      CHECK(multi.v[i].to_vector<double>() == single.v[i].to_vector<double>());
    }
  }
  // An empty list is a no-op.
  adam_step_multi({}, {}, {}, {}, {});
}

TEST_CASE("adam_step and adam_step_multi with grad_scale_tensor equal the same scale given as a number, to the bit") {
  // A factor that is not a power of two, so that where it is rounded (f64, then the element type)
  // matters.
  const double factor = 0.3713;
  for (DType dtype : {DType::f32, DType::f64}) {  // the CPU's Adam dtypes (tests/cuda: bf16)
    CAPTURE(dtype_name(dtype));
    AdamState by_number = make_state({{257}, {3, 5}}, dtype, 400);
    AdamState by_tensor = copy_state(by_number), single = copy_state(by_number);
    // grad_scale 2 times the tensor's value: the two multiply in f64 before rounding.
    const Tensor scale_tensor = Tensor::full(Shape{}, factor, DType::f64);
    for (std::int64_t t = 1; t <= 2; ++t) {
      adam_step_multi(by_number.p, by_number.g, by_number.m, by_number.v,
                      {.lr = 0.01, .step = t, .grad_scale = 2.0 * factor});
      adam_step_multi(by_tensor.p, by_tensor.g, by_tensor.m, by_tensor.v,
                      {.lr = 0.01, .step = t, .grad_scale = 2.0, .grad_scale_tensor = scale_tensor});
      for (std::size_t i = 0; i < single.p.size(); ++i)
        adam_step(single.p[i], single.g[i], single.m[i], single.v[i],
                  {.lr = 0.01, .step = t, .grad_scale = 2.0, .grad_scale_tensor = scale_tensor});
    }
    for (std::size_t i = 0; i < by_number.p.size(); ++i) {
      CAPTURE(i);
      CHECK(by_tensor.p[i].to_vector<double>() == by_number.p[i].to_vector<double>());
      CHECK(by_tensor.v[i].to_vector<double>() == by_number.v[i].to_vector<double>());
      CHECK(single.p[i].to_vector<double>() == by_number.p[i].to_vector<double>());
    }
    // And the scale acts: without it the parameters differ.
    AdamState unscaled = make_state({{257}, {3, 5}}, dtype, 400);
    adam_step_multi(unscaled.p, unscaled.g, unscaled.m, unscaled.v, {.lr = 0.01, .step = 1, .grad_scale = 2.0});
    AdamState scaled = make_state({{257}, {3, 5}}, dtype, 400);
    adam_step_multi(scaled.p, scaled.g, scaled.m, scaled.v,
                    {.lr = 0.01, .step = 1, .grad_scale = 2.0, .grad_scale_tensor = scale_tensor});
    CHECK(scaled.m[0].to_vector<double>() != unscaled.m[0].to_vector<double>());
  }
}

TEST_CASE("adam_step refuses a grad_scale_tensor of the wrong kind or value") {
  Tensor p = Tensor::zeros({3}), m = Tensor::zeros({3}), v = Tensor::zeros({3});
  const Tensor g = Tensor::zeros({3});
  CHECK_THROWS_WITH_AS(adam_step(p, g, m, v, {.grad_scale_tensor = Tensor::full(Shape{}, 0.5, DType::f32)}),
                       doctest::Contains("grad_scale_tensor must be a [] f64 tensor on the parameters' device cpu, "
                                         "got f32[] on cpu"),
                       Error);
  CHECK_THROWS_WITH_AS(adam_step(p, g, m, v, {.grad_scale_tensor = Tensor::full({1}, 0.5, DType::f64)}),
                       doctest::Contains("must be a [] f64 tensor"), Error);
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    CAPTURE(bad);
    std::vector<Tensor> ps = {p}, gs = {g}, ms = {m}, vs = {v};
    CHECK_THROWS_WITH_AS(adam_step_multi(ps, gs, ms, vs, {.grad_scale_tensor = Tensor::full(Shape{}, bad, DType::f64)}),
                         doctest::Contains("adam_step_multi: grad_scale_tensor must hold a finite value > 0"), Error);
  }
  CHECK(p.to_vector<float>() == std::vector<float>(3, 0.0f));
}

TEST_CASE("adam_step_multi does not depend on the thread count") {
  testing::ThreadCountGuard guard;
  const AdamState start = make_state(kMixedShapes, DType::f32, 200);
  std::vector<std::vector<float>> results[2];
  for (int run = 0; run < 2; ++run) {
    set_num_threads(run == 0 ? 1 : 3);
    AdamState s = copy_state(start);
    adam_step_multi(s.p, s.g, s.m, s.v, {});
    for (const Tensor& p : s.p) results[run].push_back(p.to_vector<float>());
  }
  CHECK(results[0] == results[1]);
}

TEST_CASE("adam_step_multi checks every entry before changing anything") {
  AdamState s = make_state({{2}, {3}}, DType::f32, 300);
  const auto before = s.p[0].to_vector<float>();
  const std::vector<Tensor> one = {s.p[0]};
  CHECK_THROWS_WITH_AS(adam_step_multi(s.p, one, s.m, s.v, {}),
                       doctest::Contains("adam_step_multi: the lists must have one length, got 2 params, 1 grads"),
                       Error);
  std::vector<Tensor> bad_m = {s.m[0], Tensor::zeros({4})};
  CHECK_THROWS_WITH_AS(adam_step_multi(s.p, s.g, bad_m, s.v, {}),
                       doctest::Contains("adam_step_multi (entry 1): shapes differ: [3] and [4]"), Error);
  std::vector<Tensor> mixed = {s.p[0], Tensor::zeros({3}, DType::f64)};
  CHECK_THROWS_WITH_AS(adam_step_multi(mixed, s.g, s.m, s.v, {}),
                       doctest::Contains("adam_step_multi (entry 1): param f64[3] on cpu differs from entry 0's"),
                       Error);
  std::vector<Tensor> twice = {s.p[0], s.p[0]};
  std::vector<Tensor> g2 = {s.g[0], s.g[0]}, m2 = {s.m[0], s.m[0].clone()}, v2 = {s.v[0], s.v[0].clone()};
  CHECK_THROWS_WITH_AS(adam_step_multi(twice, g2, m2, v2, {}),
                       doctest::Contains("adam_step_multi (entry 1): param f32[2] on cpu shares its storage"), Error);
  CHECK_THROWS_WITH_AS(adam_step_multi(s.p, s.g, s.m, s.v, {.step = 0}),
                       doctest::Contains("adam_step_multi: step must be >= 1"), Error);
  CHECK(s.p[0].to_vector<float>() == before);
}

TEST_CASE("adam_step_multi writes bf16 copies that equal the updated params cast to bf16, to the bit") {
  AdamState s = make_state(kMixedShapes, DType::f32, 300);
  AdamState plain = copy_state(s);
  // A copy for every other entry; the rest undefined.
  std::vector<Tensor> copies;
  for (std::size_t i = 0; i < s.p.size(); ++i)
    copies.push_back(i % 2 == 0 ? Tensor::full(s.p[i].shape(), 7.0, DType::bf16) : Tensor());
  for (std::int64_t t = 1; t <= 2; ++t) {
    const AdamHyper h{.lr = 0.02, .step = t, .weight_decay = 0.1};
    adam_step_multi(s.p, s.g, s.m, s.v, h, copies);
    adam_step_multi(plain.p, plain.g, plain.m, plain.v, h);
  }
  for (std::size_t i = 0; i < s.p.size(); ++i) {
    CAPTURE(i);
    CHECK(s.p[i].to_vector<double>() == plain.p[i].to_vector<double>());  // the update is unchanged
    if (!copies[i].defined()) continue;
    const Tensor want = s.p[i].to(DType::bf16);
    const bf16* got = copies[i].data<bf16>();
    std::int64_t wrong = 0;
    for (std::int64_t k = 0; k < want.numel(); ++k) wrong += got[k].bits != want.data<bf16>()[k].bits;
    CHECK(wrong == 0);
  }
}

TEST_CASE("adam_step_multi refuses bf16 copies of the wrong kind before changing anything") {
  AdamState s = make_state({{3, 4}, {5}}, DType::f32, 400);
  const std::vector<double> before = s.p[0].to_vector<double>();
  const Tensor good = Tensor::zeros({3, 4}, DType::bf16);
  const std::vector<std::pair<std::vector<Tensor>, std::string>> bad = {
      {{good}, "1 bf16 copies for 2 params"},
      {{Tensor::zeros({4, 3}, DType::bf16), Tensor()}, "the bf16 copy of param f32[3, 4] on cpu must be"},
      {{Tensor::zeros({3, 4}, DType::f32), Tensor()}, "the bf16 copy of param f32[3, 4] on cpu must be"}};
  for (const auto& entry : bad) {
    const std::vector<Tensor>& copies = entry.first;
    const std::string& message = entry.second;
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(adam_step_multi(s.p, s.g, s.m, s.v, {.step = 1}, copies), doctest::Contains(message.c_str()),
                         Error);
  }
  CHECK(s.p[0].to_vector<double>() == before);
  AdamState d = make_state({{3, 4}}, DType::f64, 500);
  CHECK_THROWS_WITH_AS(adam_step_multi(d.p, d.g, d.m, d.v, {.step = 1}, std::vector<Tensor>{good}),
                       doctest::Contains("and the param f32"), Error);
}
