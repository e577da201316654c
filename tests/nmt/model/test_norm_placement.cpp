// The residual block's norm as a choice: post-norm (the paper), pre-norm or DeepNorm, with
// layer_norm or rms_norm, through the whole model.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "attnlab/autograd.h"
#include "attnlab/nmt/model/parameter_count.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/ops.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;
using nmt::testing::plugins;
using nmt::testing::tiny_config;

namespace {

TransformerConfig with_norm(const std::string& position, const std::string& norm, std::int64_t encoder_layers = 1) {
  TransformerConfig c = tiny_config(13);
  c.encoder_layers = encoder_layers;
  c.decoder_layers = 2;
  c.norm_position = kNormPositions.parse(position);
  c.norm.name = norm;
  return c;
}

bool has_parameter(const Module& m, const std::string& name) {
  for (const auto& [n, _] : m.named_parameters())
    if (n == name) return true;
  return false;
}

}  // namespace

TEST_CASE("every placement and norm builds with the parameters its formula counts") {
  for (const char* position : {"post", "pre", "deepnorm"})
    for (const char* norm : {"layer_norm", "rms_norm"})
      for (std::int64_t encoder_layers : {0, 2}) {
        CAPTURE(position);
        CAPTURE(norm);
        CAPTURE(encoder_layers);
        const TransformerConfig c = with_norm(position, norm, encoder_layers);
        Generator init(1), drop(2);
        Transformer model(c, plugins(), init, drop);
        CHECK(model.parameter_count() == expected_parameter_count(c));
        CHECK(model.parameter_count() == count_parameters(c, plugins()).total);
        const bool pre = std::string(position) == "pre";
        CHECK(has_parameter(model, "decoder.norm.weight") == pre);
        CHECK(has_parameter(model, "encoder.norm.weight") == (pre && encoder_layers > 0));
        CHECK(has_parameter(model, "decoder.layers.0.norm1.bias") == (std::string(norm) == "layer_norm"));
      }
}

TEST_CASE("pre-norm, DeepNorm and rms_norm models pass the whole-model gradient check") {
  for (const char* position : {"post", "pre", "deepnorm"})
    for (const char* norm : {"layer_norm", "rms_norm"}) {
      CAPTURE(position);
      CAPTURE(norm);
      TransformerConfig c = with_norm(position, norm);
      c.vocab_size = 7;
      c.decoder_layers = 1;
      nmt::testing::check_small_model_gradients(c);
    }
}

TEST_CASE("pre-norm and DeepNorm incremental decoding gives the logits of full decoding") {
  for (const char* position : {"pre", "deepnorm"})
    for (const char* norm : {"layer_norm", "rms_norm"}) {
      CAPTURE(position);
      CAPTURE(norm);
      Generator init(5), drop(6);
      Transformer model(with_norm(position, norm), plugins(), init, drop);
      model.eval();
      const Tensor src = Tensor::from_vector<std::int64_t>({2, 4}, {4, 5, 6, 3, 7, 8, 3, 0});
      const Tensor tgt = Tensor::from_vector<std::int64_t>({2, 5}, {2, 4, 5, 6, 7, 2, 8, 9, 10, 4});
      NoGradGuard no_grad;
      const auto full = model.forward(src, tgt).to_vector<double>();
      Encoded enc = model.encode(src);
      DecoderState state = model.start_decoding();
      std::vector<Tensor> steps;
      for (const Tensor& step : split(tgt, 1, {1, 1, 1, 1, 1})) steps.push_back(model.project(model.decode(step, enc, &state)));
      const auto inc = concat(steps, 1).to_vector<double>();
      REQUIRE(inc.size() == full.size());
      for (std::size_t i = 0; i < inc.size(); ++i) CHECK(inc[i] == doctest::Approx(full[i]).epsilon(1e-5));
    }
}

TEST_CASE("the placements compute different functions from the same weights") {
  // Same seed, same parameters for post and pre (pre has two more norms, initialised to 1 and 0),
  // and for DeepNorm some scaled: the logits must differ, else the placement would not reach the
  // blocks.
  const Tensor src = Tensor::from_vector<std::int64_t>({1, 3}, {4, 5, 6});
  const Tensor tgt = Tensor::from_vector<std::int64_t>({1, 3}, {2, 4, 5});
  std::vector<std::vector<double>> logits;
  for (const char* position : {"post", "pre", "deepnorm"}) {
    Generator init(5), drop(6);
    Transformer model(with_norm(position, "layer_norm"), plugins(), init, drop);
    model.eval();
    NoGradGuard no_grad;
    logits.push_back(model.forward(src, tgt).to_vector<double>());
  }
  CHECK(logits[0] != logits[1]);
  CHECK(logits[0] != logits[2]);
  CHECK(logits[1] != logits[2]);
}

TEST_CASE("DeepNorm's constants follow the DeepNet formulas") {
  // Known values for 6 + 6 layers: N^4 M = 7776.
  const DeepNormScales s = deepnorm_scales(6, 6);
  CHECK(s.encoder_alpha == doctest::Approx(0.81 * std::pow(7776.0, 1.0 / 16.0)));
  CHECK(s.encoder_alpha == doctest::Approx(1.417938140685523));
  CHECK(s.encoder_beta == doctest::Approx(0.49698924077132345));
  CHECK(s.decoder_alpha == doctest::Approx(2.0597671439071177));  // (18)^(1/4)
  CHECK(s.decoder_beta == doctest::Approx(0.34329452398451965));  // (72)^(-1/4)
  // A decoder alone: (2M)^(1/4) and (8M)^(-1/4).
  const DeepNormScales d = deepnorm_scales(0, 4);
  CHECK(d.decoder_alpha == doctest::Approx(1.681792830507429));
  CHECK(d.decoder_beta == doctest::Approx(0.42044820762685725));
  CHECK_THROWS_AS(deepnorm_scales(2, 0), Error);
}

TEST_CASE("DeepNorm initialises the value and output projections and the feed-forward matrices times beta") {
  // Same seeds: the DeepNorm model's weights are the post-norm model's, those DeepNet scales
  // multiplied by the encoder's or the decoder's beta, every other one equal.
  const TransformerConfig post = with_norm("post", "layer_norm", 2);
  const TransformerConfig deep = with_norm("deepnorm", "layer_norm", 2);
  Generator i1(5), d1(6), i2(5), d2(6);
  Transformer a(post, plugins(), i1, d1), b(deep, plugins(), i2, d2);
  const DeepNormScales s = deepnorm_scales(2, 2);
  std::map<std::string, Tensor> post_weights;
  for (const auto& [name, t] : a.named_parameters()) post_weights[name] = t;
  int scaled = 0;
  for (const auto& entry : b.named_parameters()) {
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    CAPTURE(name);
    const bool decoder = name.starts_with("decoder.");
    const bool chosen = t.rank() == 2 && (name.find(".ffn.") != std::string::npos ||
                                          name.find("attn.w_v.") != std::string::npos ||
                                          name.find("attn.w_o.") != std::string::npos);
    const double factor = chosen ? (decoder ? s.decoder_beta : s.encoder_beta) : 1.0;
    scaled += chosen ? 1 : 0;
    const auto want = post_weights.at(name).to_vector<double>();
    const auto got = t.to_vector<double>();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == doctest::Approx(want[i] * factor).epsilon(1e-6));
  }
  // Encoder: 2 layers x (w_v, w_o, ffn w1, w2); decoder: 2 x (2 x (w_v, w_o) + w1, w2).
  CHECK(scaled == 2 * 4 + 2 * 6);
}

TEST_CASE("an unknown norm position is refused, naming the valid ones") {
  CHECK(kNormPositions.name(NormPosition::deepnorm) == "deepnorm");
  CHECK_THROWS_WITH_AS(with_norm("sandwich", "layer_norm"),
                       doctest::Contains("unknown norm position 'sandwich' (valid: post, pre, deepnorm)"), Error);
}
