// Position terms inside flash (kernel form, attnlab/plugin/kernel_terms.h) on the CPU: a
// hand-computed example, the op against the composition of core ops with the expanded terms
// (across tiles, with masks, causal masking and Tq < Tk), finite-difference gradients of every
// input including the bucket scores and values (with dropout), the plugin with the real alibi
// and relative schemes against scaled_dot (forward and attend), and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attnlab/attnlab.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/kernel_term_math.h"
#include "attnlab/testing/gradcheck.h"
#include "flash_attention.h"
#include "flash_testing.h"
#include "support/plugin_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using flash::FlashOptions;
using flash::flash_attention;
using flash::flash_attention_forward;

namespace {

using testing::f64;
using testing::mask_from_lengths;

Tensor random(const Shape& shape, std::uint64_t seed) {
  return testing::random_tensor(shape, seed, -1.0, 1.0, DType::f64);
}

Registry& plugins() {
  REQUIRE(testing::in_tree_plugins().failures.empty());
  return testing::in_tree_plugins().registry;
}

// The same attention composed of core ops, with the terms expanded to [Tq, Tk] tensors.
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const FlashOptions& o) {
  const std::int64_t tq = q.dim(2), tk = k.dim(2), q_offset = tk - tq;
  Tensor scores = scale(matmul(q, k, false, true), o.scale);
  if (Tensor t = expand_score_terms(o.score_terms, q, q_offset, tk); t.defined()) scores = add(scores, t);
  Tensor mask;
  if (o.key_padding_mask.defined()) mask = o.key_padding_mask.reshape({q.dim(0), 1, 1, tk});
  Tensor w = softmax(scores, mask, o.causal);
  Tensor out = matmul(w, v);
  if (Tensor z = expand_value_terms(o.value_terms, w, q_offset); z.defined()) out = add(out, z);
  return out;
}

void check_close(const Tensor& got, const Tensor& want, const char* what) {
  const std::string m = testing::compare(got, want, {1e-11, 1e-10});
  CHECK_MESSAGE(m.empty(), what, ": ", m);
}

// x[:, t : t + 1] of a [B, T, d] tensor.
Tensor time_step(const Tensor& x, std::int64_t t) {
  const std::int64_t len = x.dim(1);
  std::vector<std::int64_t> sizes;
  if (t > 0) sizes.push_back(t);
  sizes.push_back(1);
  if (t + 1 < len) sizes.push_back(len - t - 1);
  return split(x, 1, sizes)[t > 0 ? 1 : 0];
}

std::shared_ptr<Attention> attention(const std::string& name, Generator& init, Generator& drop) {
  BuildContext ctx;
  ctx.dims = {.d_model = 12, .n_heads = 3, .d_k = 4, .d_v = 5, .d_ff = 8, .max_length = 64};
  ctx.dtype = DType::f64;
  ctx.init = &init;
  ctx.dropout_rng = &drop;
  ctx.registry = &plugins();
  ctx.options = Options::with_defaults(plugins().find(PluginFamily::attention, name).options);
  auto a = plugins().make_attention(name, ctx);
  a->eval();
  return a;
}

}  // namespace

TEST_CASE("flash adds a distance bias, bucket scores and bucket values of a hand-computed example") {
  // One query (position 1) against keys 0 and 1 with zero products: only the terms score.
  const Tensor q = f64({1, 1, 1, 1}, {0.0}), k = f64({1, 1, 2, 1}, {0.0, 0.0}), v = f64({1, 1, 2, 1}, {2.0, 6.0});
  FlashOptions o{.scale = 1.0};
  // Slope ln 3: key 0 (distance 1) scores -ln 3, key 1 scores 0: weights 1/4 and 3/4.
  o.score_terms.slopes = f64({1}, {std::log(3.0)});
  auto r = flash_attention_forward(q, k, v, o);
  CHECK(r.out.item() == doctest::Approx(0.25 * 2.0 + 0.75 * 6.0));
  CHECK(r.logsumexp.item() == doctest::Approx(std::log(4.0 / 3.0)));
  // Clip 1: key 0 is in bucket 0 (distance -1), key 1 in bucket 1 (distance 0); bucket 0 adds
  // ln 3 back, so the weights are equal; bucket 2 (distance +1) is never used.
  o.score_terms.bucket_scores = f64({1, 1, 1, 3}, {std::log(3.0), 0.0, 5.0});
  o.score_terms.clip = 1;
  CHECK(flash_attention(q, k, v, o).item() == doctest::Approx(4.0));
  // Bucket values 10 and 20 for the two keys' buckets: half of each is added.
  o.value_terms = {.bucket_values = f64({3, 1}, {10.0, 20.0, 30.0}), .clip = 1};
  CHECK(flash_attention(q, k, v, o).item() == doctest::Approx(4.0 + 15.0));
  CHECK(terms::distance_bucket(1, 0, 1) == 0);
  CHECK(terms::distance_bucket(1, 9, 1) == 2);
}

TEST_CASE("flash with position terms equals the composition of core ops, outputs and every gradient") {
  // Tq = 37 and Tk = 70 cut the 32-wide tiles; clip 5 is reached; d_k != d_v.
  const std::int64_t b = 2, h = 3, tq = 37, tk = 70, dk = 4, dv = 5, clip = 5, n = 2 * clip + 1;
  struct Variant {
    const char* name;
    Tensor mask;
    bool causal;
  };
  const Variant variants[] = {{"no mask", {}, false},
                              {"padding mask", mask_from_lengths({70, 44}, tk), false},
                              {"causal with a padding mask", mask_from_lengths({61, 70}, tk), true}};
  for (const auto& variant : variants) {
    INFO(variant.name);
    std::vector<Tensor> in{random({b, h, tq, dk}, 1), random({b, h, tk, dk}, 2), random({b, h, tk, dv}, 3),
                           random({b, h, tq, n}, 4), random({n, dv}, 5)};
    auto run = [&](bool fused) {
      std::vector<Tensor> leaves;
      for (const Tensor& t : in) {
        Tensor c = t.detach();
        c.set_requires_grad();
        leaves.push_back(c);
      }
      FlashOptions o{.key_padding_mask = variant.mask, .causal = variant.causal, .scale = 0.6};
      o.score_terms = {.slopes = f64({h}, {0.5, 0.125, 0.03125}), .bucket_scores = leaves[3], .clip = clip};
      o.value_terms = {.bucket_values = leaves[4], .clip = clip};
      Tensor out = fused ? flash_attention(leaves[0], leaves[1], leaves[2], o)
                         : composed(leaves[0], leaves[1], leaves[2], o);
      out.backward(random(out.shape(), 6));
      std::vector<Tensor> r{out.detach()};
      for (const Tensor& l : leaves) r.push_back(l.grad());
      return r;
    };
    const auto got = run(true), want = run(false);
    const char* names[] = {"output", "dq", "dk", "dv", "d bucket scores", "d bucket values"};
    for (std::size_t i = 0; i < got.size(); ++i) check_close(got[i], want[i], names[i]);
  }
}

TEST_CASE("flash position-term gradients match finite differences, with dropout") {
  const std::int64_t clip = 2, n = 2 * clip + 1;
  const std::vector<Tensor> in{random({1, 2, 5, 3}, 11), random({1, 2, 9, 3}, 12), random({1, 2, 9, 2}, 13),
                               random({1, 2, 5, n}, 14), random({n, 2}, 15)};
  for (double p : {0.0, 0.3}) {
    INFO("dropout " << p);
    auto result = testing::gradcheck(
        [&](const std::vector<Tensor>& x) {
          FlashOptions o{.key_padding_mask = mask_from_lengths({8}, 9), .causal = true, .scale = 0.7, .dropout = p,
                         .seed = 3, .offset = 1};
          o.score_terms = {.slopes = f64({2}, {0.25, 0.5}), .bucket_scores = x[3], .clip = clip};
          o.value_terms = {.bucket_values = x[4], .clip = clip};
          return flash_attention(x[0], x[1], x[2], o);
        },
        in);
    CHECK_MESSAGE(result.ok, result.message);
  }
}

TEST_CASE("the flash plugin with alibi and relative positions equals scaled_dot, also step by step") {
  struct Case {
    const char* scheme;
    std::map<std::string, OptionValue> options;
  };
  const Case cases[] = {{"alibi", {}},
                        {"relative", {{"max_distance", std::int64_t{2}}}},
                        {"relative", {{"max_distance", std::int64_t{3}}, {"values", false}}}};
  const Tensor x = random({2, 9, 12}, 21);
  const Tensor mask = mask_from_lengths({9, 6}, 9);
  for (const Case& c : cases) {
    INFO(c.scheme);
    const testing::PositionsPart positions = testing::build_positions(plugins(), c.scheme, 3, 4, 5, c.options);
    REQUIRE(positions.inside != nullptr);
    auto run = [&](const std::string& plugin) {
      Generator init(31), drop(32);
      auto a = attention(plugin, init, drop);
      positions.inside->zero_grad();
      Tensor in = x.detach();
      in.set_requires_grad();
      Tensor out = a->forward({.query = in, .key = in, .value = in, .key_padding_mask = mask, .causal = true,
                               .positions = positions.inside.get()});
      out.backward(random(out.shape(), 22));
      std::vector<Tensor> r{out.detach(), in.grad()};
      for (const Tensor& p : positions.inside->parameters()) r.push_back(p.grad());
      // Step by step with a cache (no padding): each step's queries at the cached offset.
      NoGradGuard no_grad;
      KVCache cache;
      std::vector<Tensor> steps;
      for (std::int64_t t = 0; t < 9; ++t) {
        const Tensor s = time_step(x, t);
        steps.push_back(a->forward({.query = s, .key = s, .value = s, .causal = true, .cache = &cache,
                                    .positions = positions.inside.get()}));
      }
      r.push_back(concat(steps, 1));
      r.push_back(a->forward({.query = x, .key = x, .value = x, .causal = true, .positions = positions.inside.get()}));
      return r;
    };
    const auto got = run("flash"), want = run("scaled_dot");
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) check_close(got[i], want[i], "output, gradients or steps");
    // Incremental decoding with flash equals its full causal decoding.
    check_close(got[got.size() - 2], got.back(), "flash step by step against full");
  }
}

TEST_CASE("the attention core with positions gives the same in flash and scaled_dot, and others refuse them") {
  // attend() on heads directly (as bench_attention calls it): 3 heads of 4, causal queries at the
  // end of a longer key sequence, each scheme's part built for that head size.
  const Tensor q = random({2, 3, 5, 4}, 51), k = random({2, 3, 8, 4}, 52), v = random({2, 3, 8, 5}, 53);
  for (const char* name : {"rope", "alibi", "relative"}) {
    INFO(name);
    std::map<std::string, OptionValue> options;
    if (std::string(name) == "relative") options["max_distance"] = std::int64_t{2};
    const testing::PositionsPart positions = testing::build_positions(plugins(), name, 3, 4, 5, options);
    const AttentionCore core{.query = q, .key = k, .value = v, .causal = true, .positions = positions.inside.get()};
    Generator i1(1), d1(2), i2(1), d2(2);
    const Tensor fused = attention("flash", i1, d1)->attend(core);
    const Tensor composed = attention("scaled_dot", i2, d2)->attend(core);
    check_close(fused, composed, "attend with positions");
    // The positions act: without them the core gives something else.
    const AttentionCore plain{.query = q, .key = k, .value = v, .causal = true};
    CHECK_FALSE(testing::compare(fused, attention("flash", i1, d1)->attend(plain), {1e-6, 0}).empty());
  }
  const testing::PositionsPart alibi = testing::build_positions(plugins(), "alibi", 3, 4, 5);
  CHECK_THROWS_WITH_AS(
      check_attention_core("other", {.query = q, .key = k, .value = v, .positions = alibi.inside.get()}),
      doctest::Contains("attention other: its attend() does not apply positions; use forward()"), Error);
  CHECK_THROWS_WITH_AS(check_attention_core("flash", {.query = k, .key = q, .value = random({2, 3, 5, 5}, 54),
                                                      .positions = alibi.inside.get()},
                                            true),
                       doctest::Contains("with positions, the 8 queries cannot outnumber the 5 keys"), Error);
}

TEST_CASE("flash refuses position terms it cannot apply, naming what is wrong") {
  const Tensor q = random({1, 2, 3, 4}, 41), k = random({1, 2, 5, 4}, 42), v = random({1, 2, 5, 6}, 43);
  FlashOptions o;
  o.score_terms = {.bucket_scores = random({1, 2, 3, 4}, 44), .clip = 2};
  CHECK_THROWS_WITH_AS(flash_attention(q, k, v, o),
                       doctest::Contains("attention flash: the bucket scores must be [1, 2, 3, 5] ([batch, heads, "
                                         "queries, 2 clip + 1] for clip 2)"),
                       Error);
  o.score_terms = {.slopes = f64({3}, {1.0, 2.0, 3.0})};
  CHECK_THROWS_WITH_AS(flash_attention(q, k, v, o), doctest::Contains("slopes must be [2] (one per head)"), Error);
  o.score_terms = {};
  o.value_terms = {.bucket_values = random({3, 6}, 45).to(DType::f32), .clip = 1};
  CHECK_THROWS_WITH_AS(flash_attention(q, k, v, o),
                       doctest::Contains("the bucket values are f32 but q is f64"), Error);
  // More queries than keys have no positions that continue the keys'.
  o.value_terms = {.bucket_values = random({3, 6}, 45), .clip = 1};
  CHECK_THROWS_WITH_AS(flash_attention(random({1, 2, 7, 4}, 46), k, v, o),
                       doctest::Contains("the 7 queries cannot outnumber the 5 keys"), Error);

  // A scheme that gives score terms as tensors only is refused by the plugin, and by attnlab check.
  class TensorsOnly final : public AttentionPositions {
   public:
    Tensor score_terms(const Tensor& x, std::int64_t, std::int64_t keys) const override {
      return Tensor::zeros({x.dim(1), x.dim(2), keys}, x.dtype());
    }
  } tensors_only;
  Generator init(1), drop(2);
  auto a = attention("flash", init, drop);
  const Tensor x = random({1, 4, 12}, 47);
  CHECK_THROWS_WITH_AS(a->forward({.query = x, .key = x, .value = x, .positions = &tensors_only}),
                       doctest::Contains("attention flash: the positional scheme gives its score terms as [Tq, Tk] "
                                         "tensors only, not in kernel form"),
                       Error);
  const PluginInfo& flash = plugins().find(PluginFamily::attention, "flash");
  const auto refused = check_attention_support(flash, Device::cpu(), DType::f32, 4, 4,
                                               {.positions = {.score_terms = true}, .positional = "tensors_only"});
  REQUIRE(refused.has_value());
  CHECK(refused->find("does not support position terms outside kernel form (positional plugin 'tensors_only' gives "
                      "its terms as tensors only) on cpu") != std::string::npos);
  for (const char* name : {"alibi", "relative"}) {
    const AttentionNeeds needs{.positions = plugins().find(PluginFamily::positional, name).positions,
                               .positional = name};
    CHECK_FALSE(check_attention_support(flash, Device::cpu(), DType::f32, 4, 4, needs).has_value());
  }
}
