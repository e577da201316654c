// Transformers with score expressions: learned tensors are parameters of each attention layer that
// reads them, named <layer>.<site>.NAME and counted; flash gives scaled_dot's logits and gradients;
// incremental decoding (and beam search) gives the logits of full decoding; the whole model passes
// a finite-difference gradient check.
#include <doctest/doctest.h>

#include "attnlab/autograd.h"
#include "attnlab/nmt/model/parameter_count.h"
#include "attnlab/ops.h"
#include "attnlab/testing/expression_variants.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;
using nmt::testing::plugins;

namespace {

using attnlab::testing::head_tensor;

// 2 + 2 layers, 2 heads; a learned T5-style bias everywhere, soft-capping in the encoder, a window
// in the decoder's self-attention and the lengths in cross-attention.
TransformerConfig config_with_expressions(const std::string& attention) {
  TransformerConfig c = nmt::testing::tiny_config(11);
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.attention.name = attention;
  AttentionExpressions& e = c.expressions;
  const std::string bias = "bias[h, clamp(kv_idx - q_idx, -2, 2) + 2]";
  e.encoder.score_mod.text = "3 * tanh(score / 3) + " + bias;
  e.decoder.score_mod.text = "score + " + bias;
  e.decoder.mask_mod.text = "q_idx - kv_idx <= 2";
  e.cross.score_mod.text = "score * temp[h] - 0.1 * float(abs(kv_len - q_len))";
  e.tensors = {head_tensor("bias", {2, 5}, expr::TensorInit::normal, true),
               head_tensor("temp", {2}, expr::TensorInit::values, true, {1.5, 0.5})};
  return c;
}

}  // namespace

TEST_CASE("learned expression tensors are each layer's parameters, named after the site, and counted") {
  const TransformerConfig c = config_with_expressions("scaled_dot");
  Generator init(1), drop(2);
  Transformer model(c, plugins(), init, drop);
  std::vector<std::string> names;
  for (const auto& [name, t] : model.named_parameters())
    if (name.ends_with(".bias") && name.find("attn.bias") != std::string::npos) names.push_back(name);
    else if (name.ends_with(".temp")) names.push_back(name);
  CHECK(names == std::vector<std::string>{"encoder.layers.0.self_attn.bias", "encoder.layers.1.self_attn.bias",
                                          "decoder.layers.0.self_attn.bias", "decoder.layers.0.cross_attn.temp",
                                          "decoder.layers.1.self_attn.bias", "decoder.layers.1.cross_attn.temp"});
  // 4 layers read bias (2 x 5), 2 read temp (2).
  CHECK(expression_parameter_count(c) == 4 * 10 + 2 * 2);
  CHECK(count_parameters(c, plugins()).total == model.parameter_count());
  CHECK(expected_parameter_count(c) == model.parameter_count());
}

TEST_CASE("flash with score expressions gives scaled_dot's logits and gradients, padding included") {
  Generator i1(3), d1(4), i2(3), d2(4);
  Transformer a(config_with_expressions("scaled_dot"), plugins(), i1, d1);
  Transformer b(config_with_expressions("flash"), plugins(), i2, d2);
  a.eval();
  b.eval();
  const nmt::testing::PaddedBatch batch = nmt::testing::padded_batch(11);
  Tensor la = a.forward(batch.src, batch.tgt_in), lb = b.forward(batch.src, batch.tgt_in);
  const auto x = la.to_vector<double>(), y = lb.to_vector<double>();
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(x[i] == doctest::Approx(y[i]).epsilon(1e-4));
  sum(la).backward();
  sum(lb).backward();
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t k = 0; k < pa.size(); ++k) {
    INFO(pa[k].first);
    const auto ga = pa[k].second.grad().to_vector<double>(), gb = pb[k].second.grad().to_vector<double>();
    // f32 sums in other orders: 1e-3 relative, and 1e-5 absolute for gradients that are zero but
    // for rounding (the key projection's bias shifts every score of a row alike).
    for (std::size_t i = 0; i < ga.size(); ++i) REQUIRE(std::abs(ga[i] - gb[i]) <= 1e-5 + 1e-3 * std::abs(gb[i]));
  }
}

TEST_CASE("with score expressions, incremental decoding gives the logits of full decoding") {
  for (const char* attention : {"scaled_dot", "flash"}) {
    INFO(attention);
    TransformerConfig c = config_with_expressions(attention);
    // Lengths differ between full and incremental decoding (the target so far); positions do not.
    c.expressions.cross.score_mod.text = "score * temp[h] - 0.1 * float(kv_len)";
    Generator init(5), drop(6);
    Transformer model(c, plugins(), init, drop);
    model.eval();
    nmt::testing::full_logits_equal_incremental(model);
  }
}

TEST_CASE("a transformer with score expressions passes a finite-difference gradient check") {
  TransformerConfig c = config_with_expressions("flash");
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  const auto result = nmt::testing::whole_model_gradcheck(c);
  CHECK_MESSAGE(result.ok, result.message);
}
