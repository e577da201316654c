#pragma once
// Positions inside self-attention: what a positional plugin may do to the attention of every
// self-attention layer besides (or instead of) adding to the embeddings. Three hooks cover the
// schemes in use:
//   rotate       queries and keys are transformed by their positions before their product
//                (rotary embeddings, Su et al. 2021);
//   score terms  a term added to the scaled scores q k^T / sqrt(d_k) before the masks and the
//                softmax, from the key and query positions and optionally the queries (ALiBi,
//                Press et al. 2022; Shaw et al. 2018's relative keys);
//   value terms  a term added to each head's output from the attention weights (Shaw et al.'s
//                relative values).
// Keys sit at positions 0 .. Tk - 1 and the Tq queries of a call at Tk - Tq .. Tk - 1: with a KV
// cache, the new steps continue the cached ones, so incremental decoding sees the offsets of full
// decoding. Only self-attention takes positions; cross-attention has no common position axis.
//
// Score and value terms of a few common kinds can also be given in kernel form (kernel_terms.h):
// per head, query and distance bucket, so that fused kernels apply them without a [Tq, Tk] matrix.
//
// A positional plugin declares the hooks it uses (PluginInfo::positions) and an attention plugin
// those it applies on each device (AttentionDeviceSupport::positions); `attnlab check` refuses a
// model whose attention does not apply what its positional plugin uses, naming both.
#include <cstdint>
#include <string>

#include "attnlab/module.h"
#include "attnlab/plugin/kernel_terms.h"

namespace attnlab {

struct PositionHooks {
  bool rotate = false;
  bool score_terms = false;
  bool value_terms = false;
  // A positional scheme: its score and value terms are also given in kernel form
  // (AttentionPositions::kernel_score_terms and kernel_value_terms). An attention plugin: it
  // applies score and value terms only from that form (fused kernels that never hold the scores).
  bool kernel_form = false;
  bool any() const { return rotate || score_terms || value_terms; }
  // The hooks set here and not in `served` (kernel_form is not a hook: never set in the result).
  PositionHooks missing_from(const PositionHooks& served) const {
    return {rotate && !served.rotate, score_terms && !served.score_terms, value_terms && !served.value_terms};
  }
  // "rotation, score terms", "score terms, value terms (kernel form)", or "none".
  std::string describe() const;
  // Every hook, with terms in any form.
  static PositionHooks all() { return {true, true, true, false}; }
};

// The per-layer part of a positional scheme, built by PositionalEncoding::attention_positions for
// each self-attention layer (its parameters, if any, are that layer's). Every hook defaults to
// doing nothing; a scheme overrides the ones it declares. Each must be differentiable in its
// tensor argument and in the module's parameters.
class AttentionPositions : public Module {
 public:
  // x [B, h, T, d] at positions offset .. offset + T - 1 -> the same shape (queries or keys).
  virtual Tensor rotate(const Tensor& x, std::int64_t offset) const;
  // q [B, h, Tq, d_k] at positions q_offset .., keys at 0 .. keys - 1 -> the term added to the
  // scaled scores, [B, h, Tq, keys] or [h, Tq, keys] (the same for every batch row); undefined
  // when there is none.
  virtual Tensor score_terms(const Tensor& q, std::int64_t q_offset, std::int64_t keys) const;
  // weights [B, h, Tq, Tk] (after the softmax and its dropout), queries at q_offset .. -> the
  // term added to the heads' output, [B, h, Tq, d_v]; undefined when there is none.
  virtual Tensor value_terms(const Tensor& weights, std::int64_t q_offset) const;

  // The same terms in kernel form (kernel_terms.h), for schemes that declare
  // PositionHooks::kernel_form; by default none. The default score_terms and value_terms are the
  // expansion of these, so a scheme whose terms are of those kinds overrides only these two.
  virtual KernelScoreTerms kernel_score_terms(const Tensor& q, std::int64_t q_offset, std::int64_t keys) const;
  virtual KernelValueTerms kernel_value_terms() const;
};

}  // namespace attnlab
