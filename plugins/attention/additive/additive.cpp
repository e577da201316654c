// attention "additive": multi-head additive attention (Bahdanau et al. 2015), the compatibility
// function the Transformer paper compares dot-product attention against (sec. 3.2.1):
//   score_h(q_i, k_j) = v_h^T tanh(q_i W_h^Q + k_j W_h^K),   W_h^Q, W_h^K: d_model -> d_k,
//   head_h = softmax(score_h) V W_h^V,   MultiHead = Concat(head_1..head_h) W^O,
// with v a learned [h, d_k] parameter. Masking, dropout on the weights and the KV cache behave
// exactly as in "scaled_dot". Of the positions inside attention it applies score and value terms
// (ALiBi, relative positions); rotating queries and keys means nothing to a sum inside tanh, so
// rotary schemes are refused. Composed from core ops, so autodiff is free; the pairwise sums
// q_i + k_j are materialised, so memory grows as B * Tq * Tk * h * d_k.
#include "attnlab/init.h"
#include "attnlab/nn/linear.h"
#include "attnlab/ops.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class AdditiveAttention final : public ProjectedAttention {
 public:
  // The key projection has no bias: inside tanh(q W^Q + b_q + k W^K + b_k) a second bias would
  // only duplicate the query's.
  explicit AdditiveAttention(const BuildContext& ctx) : ProjectedAttention("additive", ctx, /*check=*/{}, /*key_bias=*/false) {
    // v_h: Xavier-uniform as a [1, d_k] weight per head (fan_in d_k, fan_out 1).
    v_ = register_parameter("v", xavier_uniform(h_, d_k_, *ctx.init, ctx.dtype, ctx.device));
    dropout_ = register_module("dropout", ctx.make_dropout(ctx.dropout.attention, DropoutSite::attention));
  }

  Tensor forward(const AttentionInputs& in) override {
    check_attention_input("additive", "query", in.query, d_model_);
    const std::int64_t b = in.query.dim(0), tq = in.query.dim(1);
    Tensor q = w_q_->forward(in.query);  // [B, Tq, h * d_k]
    auto [k, v] = projected_keys_values(in);  // [B, h, Tk, d_k], [B, h, Tk, d_v] (the cache's layout)
    ATTNLAB_CHECK(k.dim(0) == b, "attention additive: query batch {} but key batch {}", b, k.dim(0));
    const std::int64_t tk = k.dim(2);
    Tensor scores = additive_scores(q, merge_heads(k), b, tq, tk);  // [B, h, Tq, Tk]
    if (in.positions) scores = add_position_scores(in, scores, split_heads(q, h_));
    Tensor mask = attention_padding_mask("additive", in, b, tk);
    Tensor weights = dropout_->forward(softmax(scores, mask, in.causal));  // [B, h, Tq, Tk]
    Tensor heads = add_position_values(in, matmul(weights, v), weights);   // [B, h, Tq, d_v]
    return w_o_->forward(merge_heads(heads));                              // [B, Tq, d]
  }

 private:
  // q [B, Tq, H], k [B, Tk, H] with H = h * d_k -> scores [B, h, Tq, Tk],
  //   scores[b, n, i, j] = sum_c v[n, c] tanh(q[b, i, n, c] + k[b, j, n, c]).
  // The binary ops broadcast only a suffix, so both operands of the pairwise sum are expanded to
  // [B, Tq, Tk, H] by a product with a row of ones (whose gradient sums the copies back).
  Tensor additive_scores(const Tensor& q, const Tensor& k, std::int64_t b, std::int64_t tq,
                         std::int64_t tk) const {
    const std::int64_t hd = h_ * d_k_;
    Tensor ones_k = Tensor::full({1, tk}, 1.0, q.dtype(), q.device());
    Tensor ones_q = Tensor::full({1, tq}, 1.0, q.dtype(), q.device());
    // [B, Tq, H, 1] x [1, Tk] -> [B, Tq, H, Tk] -> [B, Tq, Tk, H]: entry (i, j) holds q_i.
    Tensor q_rep = transpose(matmul(q.reshape({b, tq, hd, 1}), ones_k), 2, 3);
    // [B, Tk * H, 1] x [1, Tq] -> [B, Tk * H, Tq] -> [B, Tq, Tk * H]: entry (i, j) holds k_j.
    Tensor k_rep = transpose(matmul(k.reshape({b, tk * hd, 1}), ones_q), 1, 2).reshape({b, tq, tk, hd});
    Tensor e = mul(tanh(add(q_rep, k_rep)), v_.reshape({hd}));             // [B, Tq, Tk, H]
    Tensor s = sum(e.reshape({b, tq, tk, h_, d_k_}), -1);                  // [B, Tq, Tk, h]
    return permute(s, {0, 3, 1, 2});
  }

  Tensor v_;  // [h, d_k]
  std::shared_ptr<Dropout> dropout_;
};

AttentionCapabilities capabilities() {
  AttentionCapabilities caps;
  for (auto& d : caps.devices) d.positions = {.score_terms = true, .value_terms = true};
  return caps;
}

void register_plugins(Registry& registry) {
  registry.add_attention(
      {.name = "additive",
       .version = "1.0.0",
       .description = "multi-head additive attention v^T tanh(W_q q + W_k k) (Bahdanau et al. 2015; "
                      "Vaswani et al. 2017, sec. 3.2.1)",
       .options = {{"bias", OptionType::boolean, OptionValue(true),
                    "learn biases in the query, value and output projections"}},
       .capabilities = capabilities()},
      [](const BuildContext& ctx) { return std::make_shared<AdditiveAttention>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("additive", "1.0.0", "multi-head additive attention", register_plugins)
