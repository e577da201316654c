// attention "scaled_dot": the paper's multi-head scaled dot-product attention,
//   MultiHead(Q, K, V) = Concat(head_1..head_h) W^O,
//   head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V,
// composed from core ops, so that it runs on every backend the core serves and autodiff is free.
#include <cmath>

#include "attnlab/nn/linear.h"
#include "attnlab/ops.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class ScaledDotAttention final : public Attention {
 public:
  explicit ScaledDotAttention(const BuildContext& ctx)
      : d_model_(ctx.dims.d_model), h_(ctx.dims.n_heads), d_k_(ctx.dims.d_k), d_v_(ctx.dims.d_v) {
    ATTNLAB_CHECK(ctx.init != nullptr, "attention scaled_dot: the build context has no init generator");
    ATTNLAB_CHECK(h_ > 0 && d_k_ > 0 && d_v_ > 0, "attention scaled_dot: h, d_k and d_v must be positive");
    const bool bias = ctx.options.get_bool("bias");
    w_q_ = register_module("w_q", std::make_shared<nn::Linear>(d_model_, h_ * d_k_, bias, *ctx.init, ctx.dtype, ctx.device));
    w_k_ = register_module("w_k", std::make_shared<nn::Linear>(d_model_, h_ * d_k_, bias, *ctx.init, ctx.dtype, ctx.device));
    w_v_ = register_module("w_v", std::make_shared<nn::Linear>(d_model_, h_ * d_v_, bias, *ctx.init, ctx.dtype, ctx.device));
    w_o_ = register_module("w_o", std::make_shared<nn::Linear>(h_ * d_v_, d_model_, bias, *ctx.init, ctx.dtype, ctx.device));
    dropout_ = register_module("dropout", ctx.make_dropout(ctx.dropout.attention));
  }

  Tensor forward(const AttentionInputs& in) override {
    check_attention_input("scaled_dot", "query", in.query, d_model_);
    Tensor q = split_heads(w_q_->forward(in.query), h_);  // [B, h, Tq, d_k]
    auto [k, v] = attention_keys_values(  // [B, h, Tk, d_k], [B, h, Tk, d_v]
        "scaled_dot", in, d_model_, [&](const Tensor& x) { return split_heads(w_k_->forward(x), h_); },
        [&](const Tensor& x) { return split_heads(w_v_->forward(x), h_); });
    return w_o_->forward(merge_heads(core(q, k, v, in.key_padding_mask, in.causal, true)));  // [B, Tq, d]
  }

  Tensor attend(const AttentionCore& c) override {
    check_attention_core("scaled_dot", c);
    return core(c.query, c.key, c.value, c.key_padding_mask, c.causal, false);
  }

 private:
  // softmax(q k^T / sqrt(d_k) + masks) v: [B, h, Tq, d_k], [B, h, Tk, d_k], [B, h, Tk, d_v] ->
  // [B, h, Tq, d_v], with the dropout plugin on the weights when `dropout`.
  Tensor core(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding_mask, bool causal,
              bool dropout) {
    Tensor scores = scale(matmul(q, k, false, true), 1.0 / std::sqrt(static_cast<double>(q.dim(3))));
    AttentionInputs masks;
    masks.key_padding_mask = key_padding_mask;
    Tensor mask = attention_padding_mask("scaled_dot", masks, q.dim(0), k.dim(2));  // [B, 1, 1, Tk]
    Tensor weights = softmax(scores, mask, causal);                                // [B, h, Tq, Tk]
    if (dropout) weights = dropout_->forward(weights);
    return matmul(weights, v);
  }

  std::int64_t d_model_, h_, d_k_, d_v_;
  std::shared_ptr<nn::Linear> w_q_, w_k_, w_v_, w_o_;
  std::shared_ptr<Dropout> dropout_;
};

void register_plugins(Registry& registry) {
  registry.add_attention(
      {.name = "scaled_dot",
       .version = "1.0.0",
       .description = "multi-head scaled dot-product attention (Vaswani et al. 2017, sec. 3.2)",
       .options = {{"bias", OptionType::boolean, OptionValue(true),
                    "learn biases in the Q, K, V and output projections"}}},
      [](const BuildContext& ctx) { return std::make_shared<ScaledDotAttention>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("scaled_dot", "1.0.0", "multi-head scaled dot-product attention", register_plugins)
