// attention "scaled_dot": the paper's multi-head scaled dot-product attention,
//   MultiHead(Q, K, V) = Concat(head_1..head_h) W^O,
//   head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V,
// composed from core ops, so that it runs on every backend the core serves and autodiff is free.
// Score expressions (score_mod, mask_mod) apply to its dense scores on the CPU (apply_score_expr):
// the reference that fused kernels are checked against.
#include <cmath>

#include "attnlab/nn/linear.h"
#include "attnlab/ops.h"
#include "attnlab/ops/score_expr.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class ScaledDotAttention final : public ProjectedAttention {
 public:
  explicit ScaledDotAttention(const BuildContext& ctx)
      : ProjectedAttention("scaled_dot", ctx, /*check=*/{}, /*key_bias=*/true, /*score_expressions=*/true) {
    dropout_ = register_module("dropout", ctx.make_dropout(ctx.dropout.attention, DropoutSite::attention));
  }

  Tensor forward(const AttentionInputs& in) override {
    check_attention_input("scaled_dot", "query", in.query, d_model_);
    auto [k, v] = projected_keys_values(in);          // [B, h, Tk, d_k], [B, h, Tk, d_v]
    Tensor q = projected_queries(in, k.dim(2));       // [B, h, Tq, d_k]
    const auto expressions = score_expr_call(in, q, k.dim(2));
    return w_o_->forward(merge_heads(core(q, k, v, in, true, expressions ? &*expressions : nullptr)));  // [B, Tq, d]
  }

  Tensor attend(const AttentionCore& c) override {
    check_attention_core("scaled_dot", c, true, true);
    AttentionInputs masks;
    masks.key_padding_mask = c.key_padding_mask;
    masks.causal = c.causal;
    masks.positions = c.positions;
    const auto [q, k] = rotated_core(c);
    return core(q, k, c.value, masks, false, c.expressions);
  }

 private:
  // softmax(expressions(q k^T / sqrt(d_k) + position terms) + masks) v (+ position terms):
  // [B, h, Tq, d_k], [B, h, Tk, d_k], [B, h, Tk, d_v] -> [B, h, Tq, d_v], with the dropout plugin on
  // the weights when `dropout`. The masks and positions come from `in`.
  Tensor core(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionInputs& in, bool dropout,
              const expr::ScoreExprCall* expressions) {
    Tensor scores = scale(matmul(q, k, false, true), 1.0 / std::sqrt(static_cast<double>(q.dim(3))));
    scores = add_position_scores(in, scores, q);
    if (expressions) scores = apply_score_expr(scores, *expressions);
    Tensor mask = attention_padding_mask("scaled_dot", in, q.dim(0), k.dim(2));  // [B, 1, 1, Tk]
    Tensor weights = softmax(scores, mask, in.causal);                         // [B, h, Tq, Tk]
    if (dropout) weights = dropout_->forward(weights);
    return add_position_values(in, matmul(weights, v), weights);
  }

  std::shared_ptr<Dropout> dropout_;
};

// Every device and feature of the core ops, and every position hook; score expressions on the CPU
// (the dense op is a CPU op).
AttentionCapabilities capabilities() {
  AttentionCapabilities caps;
  for (auto& d : caps.devices) {
    d.positions = PositionHooks::all();
    d.score_expressions = d.device == DeviceKind::cpu;
  }
  return caps;
}

void register_plugins(Registry& registry) {
  registry.add_attention(
      {.name = "scaled_dot",
       .version = "1.0.0",
       .description = "multi-head scaled dot-product attention (Vaswani et al. 2017, sec. 3.2)",
       .options = {{"bias", OptionType::boolean, OptionValue(true),
                    "learn biases in the Q, K, V and output projections"}},
       .capabilities = capabilities()},
      [](const BuildContext& ctx) { return std::make_shared<ScaledDotAttention>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("scaled_dot", "1.0.0", "multi-head scaled dot-product attention", register_plugins)
