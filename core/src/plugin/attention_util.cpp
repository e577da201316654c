#include "attnlab/plugin/attention_util.h"

#include <cmath>

#include "attnlab/ops/binary.h"
#include "attnlab/ops/cast.h"
#include "attnlab/ops/shape_ops.h"

namespace attnlab {

Tensor Attention::attend(const AttentionCore&) {
  throw Error("this attention plugin does not expose its attention core (Attention::attend)");
}

Tensor split_heads(const Tensor& x, std::int64_t heads) {
  ATTNLAB_CHECK(x.rank() == 3 && heads > 0 && x.dim(2) % heads == 0,
                "split_heads: {} is not [batch, length, heads * d] for {} heads", x.shape().str(), heads);
  return permute(x.reshape({x.dim(0), x.dim(1), heads, x.dim(2) / heads}), {0, 2, 1, 3});
}

Tensor merge_heads(const Tensor& x) {
  ATTNLAB_CHECK(x.rank() == 4, "merge_heads: {} is not [batch, heads, length, d]", x.shape().str());
  return permute(x, {0, 2, 1, 3}).reshape({x.dim(0), x.dim(2), x.dim(1) * x.dim(3)});
}

void check_attention_input(std::string_view plugin, std::string_view what, const Tensor& x, std::int64_t d_model) {
  ATTNLAB_CHECK(x.defined() && x.rank() == 3 && x.dim(2) == d_model,
                "attention {}: {} must be [batch, length, d_model={}], got {}", plugin, what, d_model,
                x.defined() ? x.shape().str() : "undefined");
}

void check_attention_core(std::string_view plugin, const AttentionCore& c, bool applies_positions,
                          bool applies_expressions) {
  const Tensor* parts[] = {&c.query, &c.key, &c.value};
  for (const Tensor* t : parts)
    ATTNLAB_CHECK(t->defined() && t->rank() == 4, "attention {}: the core takes [batch, heads, length, d] query, "
                  "key and value, got {}", plugin, t->defined() ? t->shape().str() : "undefined");
  const Tensor &q = c.query, &k = c.key, &v = c.value;
  ATTNLAB_CHECK(q.dim(0) == k.dim(0) && k.dim(0) == v.dim(0) && q.dim(1) == k.dim(1) && k.dim(1) == v.dim(1) &&
                    q.dim(3) == k.dim(3) && k.dim(2) == v.dim(2),
                "attention {}: core query {}, key {} and value {} do not fit ([B, h, Tq, d_k], [B, h, Tk, d_k], "
                "[B, h, Tk, d_v])", plugin, q.shape().str(), k.shape().str(), v.shape().str());
  if (c.key_padding_mask.defined())
    ATTNLAB_CHECK(c.key_padding_mask.shape() == Shape({q.dim(0), k.dim(2)}),
                  "attention {}: key_padding_mask {} should be [{}, {}] (batch, keys)", plugin,
                  c.key_padding_mask.shape().str(), q.dim(0), k.dim(2));
  if (c.positions) {
    ATTNLAB_CHECK(applies_positions, "attention {}: its attend() does not apply positions; use forward()", plugin);
    ATTNLAB_CHECK(q.dim(2) <= k.dim(2), "attention {}: with positions, the {} queries cannot outnumber the {} keys",
                  plugin, q.dim(2), k.dim(2));
  }
  if (c.expressions)
    ATTNLAB_CHECK(applies_expressions, "attention plugin '{}' does not apply score expressions in its core", plugin);
}

std::pair<Tensor, Tensor> rotated_core(const AttentionCore& c) {
  if (!c.positions) return {c.query, c.key};
  return {c.positions->rotate(c.query, c.key.dim(2) - c.query.dim(2)), c.positions->rotate(c.key, 0)};
}

std::pair<Tensor, Tensor> attention_keys_values(std::string_view plugin, const AttentionInputs& in,
                                                std::int64_t d_model,
                                                const std::function<Tensor(const Tensor&)>& project_keys,
                                                const std::function<Tensor(const Tensor&)>& project_values) {
  KVCache* cache = in.cache;
  if (cache && cache->static_kv && cache->keys.defined()) return {cache->keys, cache->values};
  check_attention_input(plugin, "key", in.key, d_model);
  check_attention_input(plugin, "value", in.value, d_model);
  Tensor k = project_keys(in.key);
  Tensor v = project_values(in.value);
  if (cache) {
    if (!cache->static_kv && cache->keys.defined()) {
      k = concat({cache->keys, k}, 2);
      v = concat({cache->values, v}, 2);
    }
    cache->keys = k;
    cache->values = v;
  }
  return {k, v};
}

namespace {

// The positions of a call, checked to be self-attention's.
const AttentionPositions* positions_of(const AttentionInputs& in) {
  if (!in.positions) return nullptr;
  ATTNLAB_CHECK(!(in.cache && in.cache->static_kv),
                "attention: positions apply to self-attention only, not with a static (cross-attention) cache");
  return in.positions;
}

Tensor in_dtype_of(const Tensor& term, const Tensor& like) {
  return term.dtype() == like.dtype() ? term : cast(term, like.dtype());
}

}  // namespace

Tensor add_position_scores(const AttentionInputs& in, const Tensor& scores, const Tensor& q) {
  const AttentionPositions* p = positions_of(in);
  if (!p) return scores;
  const std::int64_t keys = scores.dim(3), tq = scores.dim(2);
  ATTNLAB_CHECK(keys >= tq, "attention: with positions, the {} queries cannot outnumber the {} keys", tq, keys);
  Tensor term = p->score_terms(q, keys - tq, keys);
  return term.defined() ? add(scores, in_dtype_of(term, scores)) : scores;
}

Tensor add_position_values(const AttentionInputs& in, const Tensor& out, const Tensor& weights) {
  const AttentionPositions* p = positions_of(in);
  if (!p) return out;
  Tensor term = p->value_terms(weights, weights.dim(3) - weights.dim(2));
  return term.defined() ? add(out, in_dtype_of(term, out)) : out;
}

Tensor attention_padding_mask(std::string_view plugin, const AttentionInputs& in, std::int64_t batch,
                              std::int64_t keys) {
  if (!in.key_padding_mask.defined()) return {};
  ATTNLAB_CHECK(in.key_padding_mask.shape() == Shape({batch, keys}),
                "attention {}: key_padding_mask {} should be [{}, {}] (batch, keys)", plugin,
                in.key_padding_mask.shape().str(), batch, keys);
  return in.key_padding_mask.reshape({batch, 1, 1, keys});
}

ProjectedAttention::ProjectedAttention(std::string_view plugin, const BuildContext& ctx,
                                       const std::function<void()>& check, bool key_bias, bool score_expressions)
    : plugin_(plugin), d_model_(ctx.dims.d_model), h_(ctx.dims.n_heads), d_k_(ctx.dims.d_k), d_v_(ctx.dims.d_v),
      score_expr_(ctx.score_expr) {
  ATTNLAB_CHECK(ctx.init != nullptr, "attention {}: the build context has no init generator", plugin);
  ATTNLAB_CHECK(h_ > 0 && d_k_ > 0 && d_v_ > 0, "attention {}: h, d_k and d_v must be positive", plugin);
  ATTNLAB_CHECK(!score_expr_ || score_expressions,
                "attention plugin '{}' does not apply score expressions (score_mod, mask_mod); use one that does "
                "(scaled_dot, flash), or set fallback = \"scaled_dot\" in [model.attention]",
                plugin);
  ATTNLAB_CHECK(!score_expr_ || score_expr_->limits().heads == h_,
                "attention {}: the score expressions were checked for {} heads, the layer has {}", plugin,
                score_expr_ ? score_expr_->limits().heads : 0, h_);
  if (check) check();
  const bool bias = ctx.options.get_bool("bias");
  auto linear = [&](std::int64_t in, std::int64_t out, bool with_bias) {
    return std::make_shared<nn::Linear>(in, out, with_bias, *ctx.init, ctx.dtype, ctx.device);
  };
  w_q_ = register_module("w_q", linear(d_model_, h_ * d_k_, bias));
  w_k_ = register_module("w_k", linear(d_model_, h_ * d_k_, bias && key_bias));
  w_v_ = register_module("w_v", linear(d_model_, h_ * d_v_, bias));
  w_o_ = register_module("w_o", linear(h_ * d_v_, d_model_, bias));
  if (!score_expr_) return;
  for (const expr::TensorSpec& spec : score_expr_->tensors()) {
    Tensor t = expr::initial_tensor(spec, *ctx.init, ctx.dtype, ctx.device);
    score_tensors_.push_back(spec.learned ? register_parameter(spec.name, t) : t);
  }
}

std::optional<expr::ScoreExprCall> ProjectedAttention::score_expr_call(const AttentionInputs& inputs, const Tensor& q,
                                                                      std::int64_t keys) const {
  if (!score_expr_) return std::nullopt;
  expr::ScoreExprCall call;
  call.expr = score_expr_;
  for (const Tensor& t : score_tensors_) call.tensors.push_back(t.dtype() == q.dtype() ? t : cast(t, q.dtype()));
  call.q_offset = inputs.query_offset >= 0 ? inputs.query_offset : keys - q.dim(2);
  call.q_lengths = inputs.query_lengths;
  call.kv_lengths = inputs.key_lengths;
  if (!call.kv_lengths.defined() && inputs.key_padding_mask.defined())
    call.kv_lengths = key_lengths_of_mask(inputs.key_padding_mask);
  return call;
}

Tensor key_lengths_of_mask(const Tensor& mask) {
  ATTNLAB_CHECK(mask.rank() == 2, "key_lengths_of_mask: the mask must be [B, Tk], got {}", mask.shape().str());
  const std::int64_t batch = mask.dim(0), tk = mask.dim(1);
  const std::vector<double> m = mask.to(Device::cpu()).to_vector<double>();
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t n = tk;
    while (n > 0 && std::isinf(m[static_cast<std::size_t>(b * tk + n - 1)]) && m[static_cast<std::size_t>(b * tk + n - 1)] < 0)
      --n;
    lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(n);
  }
  return Tensor::from_vector<std::int32_t>({batch}, lengths);
}

std::pair<Tensor, Tensor> ProjectedAttention::projected_keys_values(const AttentionInputs& inputs) {
  const AttentionPositions* positions = positions_of(inputs);
  // The new keys follow the cached ones (self-attention appends them).
  const std::int64_t offset = inputs.cache ? inputs.cache->length() : 0;
  return attention_keys_values(
      plugin_, inputs, d_model_,
      [&](const Tensor& x) {
        Tensor k = split_heads(w_k_->forward(x), h_);
        return positions ? positions->rotate(k, offset) : k;
      },
      [&](const Tensor& x) { return split_heads(w_v_->forward(x), h_); });
}

Tensor ProjectedAttention::projected_queries(const AttentionInputs& inputs, std::int64_t keys) {
  Tensor q = split_heads(w_q_->forward(inputs.query), h_);  // [B, h, Tq, d_k]
  const AttentionPositions* positions = positions_of(inputs);
  if (!positions) return q;
  ATTNLAB_CHECK(keys >= q.dim(2), "attention {}: with positions, the {} queries cannot outnumber the {} keys",
                plugin_, q.dim(2), keys);
  return positions->rotate(q, keys - q.dim(2));
}

}  // namespace attnlab
