#pragma once
// Position terms in kernel form: the score and value terms of a positional scheme
// (attention_positions.h) described per head, per query and per distance bucket rather than as
// [Tq, Tk] matrices, so that a fused attention kernel (flash) computes them inside its tiles and
// never stores a score. With p_i = q_offset + i the position of query i and j that of key j:
//   distance bias   term_ij  = -slopes[h] |p_i - j|                 (ALiBi, Press et al. 2022)
//   bucket scores   term_ij  = bucket_scores[b, h, i, r_ij]         (Shaw et al. 2018's a^K term)
//   bucket values   out_i   += sum_j w_ij bucket_values[r_ij]       (Shaw et al. 2018's a^V term)
// where r_ij = clamp(j - p_i, -clip, clip) + clip (kernel_term_math.h) and w_ij are the attention
// weights after dropout. Score terms are added to the scaled scores before the masks.
//
// A scheme whose terms are of these kinds overrides AttentionPositions::kernel_score_terms and
// kernel_value_terms and declares PositionHooks::kernel_form. Its score_terms and value_terms are
// then these, expanded by the functions below: attention plugins that compose core ops
// (scaled_dot) apply that expansion, fused kernels the compact form. docs/plugins.md shows how
// to add a kind.
#include <cstdint>
#include <string_view>

#include "attnlab/tensor.h"

namespace attnlab {

struct KernelScoreTerms {
  // [h], any float dtype: each head's slope of the distance bias. Undefined: no distance bias.
  // Not differentiable (a fixed schedule, as ALiBi's). On any device: a kernel copies them where
  // it needs them, so give them where the queries are (f32 on CUDA) to spare that copy.
  Tensor slopes{};
  // [B, h, Tq, 2 clip + 1] of the queries' dtype and device: each query's score term for each
  // distance bucket (e.g. q_i . a^K_r / sqrt(d_k)), differentiable. Undefined: none.
  Tensor bucket_scores{};
  std::int64_t clip = 0;
  bool any() const { return slopes.defined() || bucket_scores.defined(); }
};

struct KernelValueTerms {
  // [2 clip + 1, d_v] on the queries' device: each distance bucket's value vector, differentiable.
  // Undefined: no value terms.
  Tensor bucket_values{};
  std::int64_t clip = 0;
  bool any() const { return bucket_values.defined(); }
};

// Checks the terms against queries q [B, h, Tq, d_k] and values of width d_v: shapes, devices,
// dtypes and clip >= 0; the Error names `who` and the offending tensor.
void check_kernel_terms(std::string_view who, const KernelScoreTerms& scores, const KernelValueTerms& values,
                        const Tensor& q, std::int64_t d_v);

// The score terms of queries q [B, h, Tq, d_k] at positions q_offset .. against keys 0 .. keys - 1
// as a dense [B, h, Tq, keys] tensor ([1, h, Tq, keys] with a distance bias alone) of q's dtype
// and device, differentiable in bucket_scores; undefined when `terms` has none.
Tensor expand_score_terms(const KernelScoreTerms& terms, const Tensor& q, std::int64_t q_offset,
                          std::int64_t keys);

// The value terms of the weights [B, h, Tq, Tk] of queries at q_offset ..: [B, h, Tq, d_v] of the
// weights' dtype, differentiable in both; undefined when `terms` has none.
Tensor expand_value_terms(const KernelValueTerms& terms, const Tensor& weights, std::int64_t q_offset);

}  // namespace attnlab
