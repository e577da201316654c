// attention "scaled_dot": the paper's multi-head scaled dot-product attention,
//   MultiHead(Q, K, V) = Concat(head_1..head_h) W^O,
//   head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V,
// composed from core ops, so that it runs on every backend the core serves and autodiff is free.
#include <cmath>

#include "attnlab/nn/linear.h"
#include "attnlab/ops.h"
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
    check_input("query", in.query);
    const std::int64_t b = in.query.dim(0), tq = in.query.dim(1);
    Tensor q = split_heads(w_q_->forward(in.query), d_k_);  // [B, h, Tq, d_k]
    Tensor k, v;                                             // [B, h, Tk, d_k], [B, h, Tk, d_v]
    KVCache* cache = in.cache;
    if (cache && cache->static_kv && cache->keys.defined()) {
      k = cache->keys;
      v = cache->values;
    } else {
      check_input("key", in.key);
      check_input("value", in.value);
      k = split_heads(w_k_->forward(in.key), d_k_);
      v = split_heads(w_v_->forward(in.value), d_v_);
      if (cache) {
        if (!cache->static_kv && cache->keys.defined()) {
          k = concat({cache->keys, k}, 2);
          v = concat({cache->values, v}, 2);
        }
        cache->keys = k;
        cache->values = v;
      }
    }
    const std::int64_t tk = k.dim(2);
    Tensor scores = scale(matmul(q, k, false, true), 1.0 / std::sqrt(static_cast<double>(d_k_)));
    Tensor mask;
    if (in.key_padding_mask.defined()) {
      ATTNLAB_CHECK(in.key_padding_mask.shape() == Shape({b, tk}),
                    "attention scaled_dot: key_padding_mask {} should be [{}, {}] (batch, keys)",
                    in.key_padding_mask.shape().str(), b, tk);
      mask = in.key_padding_mask.reshape({b, 1, 1, tk});
    }
    Tensor weights = dropout_->forward(softmax(scores, mask, in.causal));  // [B, h, Tq, Tk]
    Tensor context = matmul(weights, v);                                   // [B, h, Tq, d_v]
    return w_o_->forward(permute(context, {0, 2, 1, 3}).reshape({b, tq, h_ * d_v_}));
  }

 private:
  // [B, T, h * d] -> [B, h, T, d]
  Tensor split_heads(const Tensor& x, std::int64_t d) const {
    return permute(x.reshape({x.dim(0), x.dim(1), h_, d}), {0, 2, 1, 3});
  }
  void check_input(const char* what, const Tensor& x) const {
    ATTNLAB_CHECK(x.defined() && x.rank() == 3 && x.dim(2) == d_model_,
                  "attention scaled_dot: {} must be [batch, length, d_model={}], got {}", what,
                  d_model_, x.defined() ? x.shape().str() : "undefined");
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
