#pragma once
// Helpers for writing attention plugins: the head layout, the KV-cache protocol of
// AttentionInputs, and the key padding mask, so that each plugin implements only its scores.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "attnlab/nn/linear.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/plugin/attention.h"
#include "attnlab/plugin/context.h"

namespace attnlab {

// [B, T, h * d] -> [B, h, T, d]
Tensor split_heads(const Tensor& x, std::int64_t heads);
// [B, h, T, d] -> [B, T, h * d]
Tensor merge_heads(const Tensor& x);

// Checks that x is [batch, length, d_model]; the Error names the plugin and what.
void check_attention_input(std::string_view plugin, std::string_view what, const Tensor& x, std::int64_t d_model);

// Checks that q [B, h, Tq, d_k], k [B, h, Tk, d_k] and v [B, h, Tk, d_v] fit together (and the
// mask, when defined, is [B, Tk]); the Error names the plugin and the shapes. Positions are
// refused unless `applies_positions` (and need Tq <= Tk), score expressions unless
// `applies_expressions`.
void check_attention_core(std::string_view plugin, const AttentionCore& core, bool applies_positions = false,
                          bool applies_expressions = false);

// The core's query and key rotated by its positions (queries at Tk - Tq .., keys at 0 ..), as
// forward() rotates them; the query and key unchanged without positions.
std::pair<Tensor, Tensor> rotated_core(const AttentionCore& core);

// The keys and values of this call, [B, h, Tk, d_k] and [B, h, Tk, d_v], following the cache
// protocol: without a cache, project(key) and project(value); self-attention with a cache appends
// the new steps' projections to it; a static (cross-attention) cache is filled once and reused.
// `project_keys` / `project_values` map [B, T, d_model] to the head layout.
std::pair<Tensor, Tensor> attention_keys_values(std::string_view plugin, const AttentionInputs& inputs,
                                                std::int64_t d_model,
                                                const std::function<Tensor(const Tensor&)>& project_keys,
                                                const std::function<Tensor(const Tensor&)>& project_values);

// Positions inside self-attention (AttentionInputs::positions; see attention_positions.h). Each is
// the identity, or returns its tensor argument unchanged, when the inputs carry no positions.
// The query offset of a call is keys - Tq: the new queries follow the cached positions.
//   scores [B, h, Tq, Tk] (already scaled) + the score terms of q [B, h, Tq, d_k];
Tensor add_position_scores(const AttentionInputs& inputs, const Tensor& scores, const Tensor& q);
//   out [B, h, Tq, d_v] + the value terms of the weights [B, h, Tq, Tk].
Tensor add_position_values(const AttentionInputs& inputs, const Tensor& out, const Tensor& weights);

// The key padding mask as [B, 1, 1, Tk] for softmax (undefined when there is none); an Error
// names the plugin and both shapes when it is not [batch, keys].
Tensor attention_padding_mask(std::string_view plugin, const AttentionInputs& inputs, std::int64_t batch,
                              std::int64_t keys);

// The paper's four projections around an attention core, for plugins that keep scaled_dot's
// parameters: w_q and w_k (d_model -> h * d_k), w_v (d_model -> h * d_v) and w_o (h * d_v ->
// d_model), created in that order from ctx.init with the plugin's `bias` option, so that one seed
// gives every such plugin the same weights and checkpoints move between them. With score
// expressions (ctx.score_expr), their tensors follow, drawn in declaration order: learned ones are
// parameters named as declared (encoder.layers.0.self_attn.bias), the others constants.
class ProjectedAttention : public Attention {
 protected:
  // Checks the context (an init generator, positive h, d_k and d_v; errors name `plugin`, a name
  // of static storage such as a literal), then runs the plugin's own `check` of it, then creates
  // the weights: a context the plugin refuses allocates nothing. key_bias = false leaves w_k
  // without a bias whatever the `bias` option says. A plugin that applies score expressions says
  // so (score_expressions); for the others, a context with expressions is an Error.
  ProjectedAttention(std::string_view plugin, const BuildContext& ctx, const std::function<void()>& check = {},
                     bool key_bias = true, bool score_expressions = false);

  // The keys and values of this call in the head layout, [B, h, Tk, d_k] and [B, h, Tk, d_v],
  // through w_k and w_v and the cache protocol of attention_keys_values. With positions that
  // rotate, the new keys are rotated at their positions before they join the cache.
  std::pair<Tensor, Tensor> projected_keys_values(const AttentionInputs& inputs);
  // The queries of this call in the head layout, [B, h, Tq, d_k], through w_q; with positions
  // that rotate, rotated at positions keys - Tq .. keys - 1 (`keys`: Tk of this call's keys).
  Tensor projected_queries(const AttentionInputs& inputs, std::int64_t keys);
  // The call's score expressions for queries q [B, h, Tq, d_k] against `keys` keys (queries at
  // inputs.query_offset .., or keys - Tq ..), their tensors in q's dtype (differentiably, for learned ones), the lengths of
  // `inputs` (or, without them, those of its key padding mask); nullopt without expressions.
  std::optional<expr::ScoreExprCall> score_expr_call(const AttentionInputs& inputs, const Tensor& q,
                                                     std::int64_t keys) const;

  std::string_view plugin_;
  std::int64_t d_model_, h_, d_k_, d_v_;
  std::shared_ptr<nn::Linear> w_q_, w_k_, w_v_, w_o_;
  std::shared_ptr<const expr::ScoreExpr> score_expr_;
  std::vector<Tensor> score_tensors_;  // expr->tensors()' values, in order
};

// The key lengths of an additive key padding mask [B, Tk]: 1 + the last key that is not -inf (0
// when every key is), as i32 [B] on the host.
Tensor key_lengths_of_mask(const Tensor& mask);

}  // namespace attnlab
