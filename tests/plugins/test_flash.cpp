// The flash attention op and plugin on the CPU: values of a hand-computed example, finite-
// difference gradients across tiles (with masks, causal masking and dropout), rows that see no
// key, dropout (deterministic for a seed, expectation kept, the very weights scaled_dot's standard
// dropout drops), f32 against f64, key lengths against the mask, thread count independence, and
// the errors for what the CUDA kernels do not serve.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attnlab/attnlab.h"
#include "attnlab/plugin/loader.h"
#include "attnlab/testing/gradcheck.h"
#include "flash_attention.h"
#include "flash_testing.h"
#include "support/tensor_testing.h"
#include "support/plugin_testing.h"

using namespace attnlab;
using flash::FlashOptions;
using flash::flash_attention;
using flash::flash_attention_forward;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

using testing::f64;
using testing::mask_from_lengths;

Registry& plugins() { return testing::in_tree_plugins().registry; }

BuildContext attention_context(const std::string& plugin, Generator& init, Generator& drop, double attention_dropout) {
  BuildContext ctx;
  ctx.dims = {.d_model = 8, .n_heads = 2, .d_k = 3, .d_v = 5, .d_ff = 12, .max_length = 64};
  ctx.dropout.attention = attention_dropout;
  ctx.dtype = DType::f64;
  ctx.init = &init;
  ctx.dropout_rng = &drop;
  ctx.registry = &plugins();
  ctx.options = Options::with_defaults(plugins().find(PluginFamily::attention, plugin).options);
  return ctx;
}

}  // namespace

TEST_CASE("flash attention gives the softmax-weighted values of a hand-computed example") {
  // One query q = 1 against keys 0 and ln 3: weights 1/4 and 3/4 of the values 2 and 6.
  const Tensor q = f64({1, 1, 1, 1}, {1.0});
  const Tensor k = f64({1, 1, 2, 1}, {0.0, std::log(3.0)});
  const Tensor v = f64({1, 1, 2, 1}, {2.0, 6.0});
  auto r = flash_attention_forward(q, k, v);
  CHECK(r.out.item() == doctest::Approx(0.25 * 2.0 + 0.75 * 6.0));
  CHECK(r.logsumexp.item() == doctest::Approx(std::log(4.0)));
  // The second key padded: all weight on the first.
  r = flash_attention_forward(q, k, v, {.key_padding_mask = f64({1, 2}, {0.0, -kInf})});
  CHECK(r.out.item() == doctest::Approx(2.0));
  CHECK(r.logsumexp.item() == doctest::Approx(0.0));
  // Causal with Tq = Tk = 2: query 0 sees key 0 only, query 1 both. A scale of 2 squares the odds.
  const Tensor q2 = f64({1, 1, 2, 1}, {1.0, 1.0});
  const auto out = flash_attention(q2, k, v, {.causal = true, .scale = 2.0}).to_vector<double>();
  CHECK(out[0] == doctest::Approx(2.0));
  CHECK(out[1] == doctest::Approx((1.0 * 2.0 + 9.0 * 6.0) / 10.0));
  // One decoding step (Tq = 1 < Tk = 2) under causal masking sees every key.
  CHECK(flash_attention(q, k, v, {.causal = true}).item() == doctest::Approx(5.0));
}

TEST_CASE("flash attention gradients match finite differences across tiles with masks and dropout") {
  // Tq = 34 and Tk = 37 cut the 32-wide tiles; d_k != d_v.
  const Tensor q = testing::random_tensor({1, 1, 34, 3}, 1, -1.0, 1.0, DType::f64);
  const Tensor k = testing::random_tensor({1, 1, 37, 3}, 2, -1.0, 1.0, DType::f64);
  const Tensor v = testing::random_tensor({1, 1, 37, 2}, 3, -1.0, 1.0, DType::f64);
  struct Variant {
    const char* name;
    FlashOptions options;
  };
  const Variant variants[] = {
      {"causal with a padding mask", {.key_padding_mask = mask_from_lengths({33}, 37), .causal = true, .scale = 0.7}},
      {"padding mask and dropout",
       {.key_padding_mask = mask_from_lengths({30}, 37), .scale = 0.5, .dropout = 0.3, .seed = 9, .offset = 4}},
  };
  for (const auto& variant : variants) {
    INFO(variant.name);
    auto result = testing::gradcheck(
        [&](const std::vector<Tensor>& in) { return flash_attention(in[0], in[1], in[2], variant.options); }, {q, k, v});
    CHECK_MESSAGE(result.ok, result.message);
  }
}

TEST_CASE("a query that sees no key gives zeros and zero gradients") {
  Tensor q = testing::random_tensor({2, 1, 3, 4}, 4, -1.0, 1.0, DType::f64);
  Tensor k = testing::random_tensor({2, 1, 5, 4}, 5, -1.0, 1.0, DType::f64);
  Tensor v = testing::random_tensor({2, 1, 5, 4}, 6, -1.0, 1.0, DType::f64);
  q.set_requires_grad();
  k.set_requires_grad();
  v.set_requires_grad();
  auto r = flash_attention_forward(q, k, v, {.key_padding_mask = mask_from_lengths({5, 0}, 5)});
  const auto out = r.out.to_vector<double>();
  const auto lse = r.logsumexp.to_vector<double>();
  for (std::size_t i = 12; i < 24; ++i) CHECK(out[i] == 0.0);  // batch row 1
  for (std::size_t i = 3; i < 6; ++i) CHECK(lse[i] == -kInf);
  sum(r.out).backward();
  for (const Tensor* t : {&q, &k, &v}) {
    const auto g = t->grad().to_vector<double>();
    const std::size_t half = g.size() / 2;
    for (std::size_t i = 0; i < g.size(); ++i) {
      CHECK(std::isfinite(g[i]));
      if (i >= half) CHECK(g[i] == 0.0);
    }
  }
}

TEST_CASE("flash dropout is deterministic for a seed and keeps the expectation") {
  const Tensor q = testing::random_tensor({4, 4, 64, 8}, 7, -1.0, 1.0, DType::f64);
  const Tensor k = testing::random_tensor({4, 4, 64, 8}, 8, -1.0, 1.0, DType::f64);
  const Tensor ones = Tensor::full({4, 4, 64, 8}, 1.0, DType::f64);
  const FlashOptions a{.scale = 0.3, .dropout = 0.3, .seed = 5, .offset = 100};
  FlashOptions b = a;
  b.offset = 101;
  CHECK(flash_attention(q, k, ones, a).to_vector<double>() == flash_attention(q, k, ones, a).to_vector<double>());
  CHECK(flash_attention(q, k, ones, a).to_vector<double>() != flash_attention(q, k, ones, b).to_vector<double>());
  // With every value 1, out_i = sum_j P_ij Z_ij: 1 in expectation (each weight is kept with
  // probability 1 - p and scaled by 1 / (1 - p)); here an average over 1024 rows.
  const double m = mean(flash_attention(q, k, ones, a)).item();
  CHECK(m == doctest::Approx(1.0).epsilon(0.02));
  CHECK(flash_attention(q, k, ones, {.scale = 0.3}).to_vector<double>()[0] == doctest::Approx(1.0));
}

TEST_CASE("flash drops the weights that scaled_dot with the standard dropout drops") {
  // Same seed: same parameters and the same position in the dropout stream, so in training with
  // attention dropout the two plugins give the same outputs and gradients.
  const Tensor x = testing::random_tensor({2, 6, 8}, 10, -1.0, 1.0, DType::f64);
  const Tensor mask = mask_from_lengths({6, 4}, 6);
  std::vector<std::vector<double>> outs, grads;
  for (const char* plugin : {"flash", "scaled_dot"}) {
    Generator init(3), drop(4);
    auto a = plugins().make_attention(plugin, attention_context(plugin, init, drop, 0.25));
    a->train();
    Tensor out = a->forward({.query = x, .key = x, .value = x, .key_padding_mask = mask, .causal = true});
    Tensor again = a->forward({.query = x, .key = x, .value = x, .key_padding_mask = mask, .causal = true});
    CHECK(out.to_vector<double>() != again.to_vector<double>());  // the stream moved on: another mask
    sum(out).backward();
    outs.push_back(out.to_vector<double>());
    grads.push_back(a->named_parameters()[0].second.grad().to_vector<double>());
  }
  CHECK_TENSOR_NEAR(f64({static_cast<std::int64_t>(outs[0].size())}, outs[0]), outs[1], testing::tolerance_for(DType::f64));
  CHECK_TENSOR_NEAR(f64({static_cast<std::int64_t>(grads[0].size())}, grads[0]), grads[1],
                    testing::tolerance_for(DType::f64));
}

TEST_CASE("flash attention in f32 agrees with f64 and key lengths agree with the mask") {
  const Tensor q = testing::random_tensor({2, 2, 40, 16}, 11, -1.0, 1.0, DType::f64);
  const Tensor k = testing::random_tensor({2, 2, 50, 16}, 12, -1.0, 1.0, DType::f64);
  const Tensor v = testing::random_tensor({2, 2, 50, 8}, 13, -1.0, 1.0, DType::f64);
  const FlashOptions masked{.key_padding_mask = mask_from_lengths({50, 17}, 50), .causal = true, .scale = 0.25};
  const Tensor want = flash_attention(q, k, v, masked);
  FlashOptions f32 = masked;
  f32.key_padding_mask = masked.key_padding_mask.to(DType::f32);
  CHECK_TENSOR_NEAR(flash_attention(q.to(DType::f32), k.to(DType::f32), v.to(DType::f32), f32), want,
                    testing::tolerance_for(DType::f32));
  const FlashOptions lengths{.key_lengths = Tensor::from_vector<std::int64_t>({2}, {50, 17}), .causal = true,
                             .scale = 0.25};
  CHECK_TENSOR_NEAR(flash_attention(q, k, v, lengths), want, testing::tolerance_for(DType::f64));
}

TEST_CASE("flash attention does not depend on the thread count") {
  testing::ThreadCountGuard guard;
  const Tensor q = testing::random_tensor({3, 2, 20, 4}, 14, -1.0, 1.0, DType::f32);
  const Tensor k = testing::random_tensor({3, 2, 20, 4}, 15, -1.0, 1.0, DType::f32);
  const FlashOptions o{.causal = true, .scale = 0.5, .dropout = 0.2, .seed = 1, .offset = 2};
  set_num_threads(1);
  const auto one = flash_attention(q, k, k, o).to_vector<float>();
  set_num_threads(2);
  CHECK(flash_attention(q, k, k, o).to_vector<float>() == one);
}

TEST_CASE("flash reads the dropout seed from a slot when set, forward and backward") {
  const Tensor q0 = testing::random_tensor({2, 2, 21, 8}, 16, -1.0, 1.0, DType::f64);
  const Tensor k0 = testing::random_tensor({2, 2, 21, 8}, 17, -1.0, 1.0, DType::f64);
  const Tensor v0 = testing::random_tensor({2, 2, 21, 8}, 18, -1.0, 1.0, DType::f64);
  const Tensor dout = testing::random_tensor({2, 2, 21, 8}, 19, -1.0, 1.0, DType::f64);
  SeedSlot slot(Device::cpu());
  slot.write(41);
  const FlashOptions by_value{.causal = true, .scale = 0.35, .dropout = 0.3, .seed = 41, .offset = 9};
  FlashOptions by_slot = by_value;
  by_slot.seed = 1;  // not what the kernels read
  by_slot.seed_slot = slot.address();
  auto run = [&](const FlashOptions& o) {
    Tensor q = q0.clone().set_requires_grad(), k = k0.clone().set_requires_grad();
    Tensor v = v0.clone().set_requires_grad();
    const Tensor out = flash_attention(q, k, v, o);
    out.backward(dout);
    return std::vector<std::vector<double>>{out.to_vector<double>(), q.grad().to_vector<double>(),
                                            k.grad().to_vector<double>(), v.grad().to_vector<double>()};
  };
  CHECK(run(by_slot) == run(by_value));
  FlashOptions other = by_value;
  other.seed = 1;
  CHECK(run(by_slot) != run(other));
}

TEST_CASE("flash refuses what its cuda kernels do not serve and names the fallback") {
  Generator init(1), drop(2);
  BuildContext ctx = attention_context("flash", init, drop, 0.0);
  ctx.dims.n_heads = 1;
  ctx.dims.d_k = ctx.dims.d_v = 512;
  ctx.device = Device::cuda(0);
  ctx.dtype = DType::f32;
  // Refused when built, before any tensor reaches the device.
  CHECK_THROWS_WITH_AS(plugins().make_attention("flash", ctx),
                       doctest::Contains("attention flash: head size d_k = 512 and d_v = 512 is not supported on cuda "
                                         "(supported head sizes: 16, 32, 64, 128); set fallback = \"scaled_dot\" in "
                                         "[model.attention]"),
                       Error);
  CHECK(flash::cuda_head_dims_problem(64, 16).empty());
  // Its registration says the same, for attnlab check.
  const auto* cuda = plugins().find(PluginFamily::attention, "flash").capabilities.on(DeviceKind::cuda);
  REQUIRE(cuda != nullptr);
  CHECK(cuda->head_dims == std::vector<std::int64_t>{16, 32, 64, 128});
  CHECK(cuda->dtypes == std::vector<DType>{DType::f32, DType::bf16});
  // Shapes that disagree are named.
  const Tensor q = Tensor::zeros({1, 2, 3, 4}, DType::f64);
  CHECK_THROWS_WITH_AS(flash_attention(q, Tensor::zeros({1, 2, 5, 3}, DType::f64), Tensor::zeros({1, 2, 5, 4}, DType::f64)),
                       doctest::Contains("attention flash: q [1, 2, 3, 4], k [1, 2, 5, 3], v [1, 2, 5, 4] disagree"),
                       Error);
}

TEST_CASE("flash computes in bf16 only for f32 inputs on cuda under bf16 precision") {
  using flash::flash_compute_dtype;
  const Device gpu = Device::cuda(0), cpu = Device::cpu();
  CHECK(flash_compute_dtype(gpu, DType::f32, Precision::bf16) == DType::bf16);
  CHECK(flash_compute_dtype(gpu, DType::f32, Precision::fp32) == DType::f32);
  CHECK(flash_compute_dtype(gpu, DType::f32, Precision::tf32) == DType::f32);
  CHECK(flash_compute_dtype(gpu, DType::bf16, Precision::fp32) == DType::bf16);
  CHECK(flash_compute_dtype(gpu, DType::bf16, Precision::bf16) == DType::bf16);
  // The CPU path has no bf16 kernels: f32 stays f32, f64 is never touched.
  CHECK(flash_compute_dtype(cpu, DType::f32, Precision::bf16) == DType::f32);
  CHECK(flash_compute_dtype(cpu, DType::f64, Precision::bf16) == DType::f64);
}

TEST_CASE("flash on the cpu under bf16 precision computes exactly as in fp32") {
  const Tensor q = testing::random_tensor({2, 2, 9, 8}, 21, -1.0, 1.0, DType::f32);
  const Tensor k = testing::random_tensor({2, 2, 11, 8}, 22, -1.0, 1.0, DType::f32);
  const Tensor v = testing::random_tensor({2, 2, 11, 4}, 23, -1.0, 1.0, DType::f32);
  const FlashOptions o{.key_padding_mask = mask_from_lengths({11, 6}, 11).to(DType::f32), .causal = true,
                       .scale = 0.3, .dropout = 0.25, .seed = 4, .offset = 9};
  const Tensor w = testing::random_tensor({2, 2, 9, 4}, 24, -1.0, 1.0, DType::f32);
  auto run = [&](Precision precision) {
    PrecisionGuard guard(precision);
    Tensor qq = q.detach(), kk = k.detach(), vv = v.detach();
    for (Tensor* x : {&qq, &kk, &vv}) x->set_requires_grad();
    const Tensor out = flash::flash_attention_in_precision(qq, kk, vv, o);
    CHECK(out.dtype() == DType::f32);
    sum(mul(out, w)).backward();  // a gradient that is not uniform
    return std::vector<std::vector<float>>{out.to_vector<float>(), qq.grad().to_vector<float>(),
                                           kk.grad().to_vector<float>(), vv.grad().to_vector<float>()};
  };
  const auto fp32 = run(Precision::fp32);
  const auto bf16 = run(Precision::bf16);
  for (std::size_t i = 0; i < fp32.size(); ++i) CHECK(bf16[i] == fp32[i]);
  // And it is the op itself.
  CHECK(flash_attention(q, k, v, o).to_vector<float>() == fp32[0]);
}
