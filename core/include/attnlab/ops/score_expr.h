#pragma once
// Score expressions applied to dense attention scores (attnlab/expr/score_expr.h): the reference
// way, for plugins that hold the [B, H, Tq, Tk] scores (scaled_dot), interpreting the program
// row by row.
#include "attnlab/expr/score_call.h"
#include "attnlab/tensor.h"

namespace attnlab {

// scores [B, H, Tq, Tk] (the scaled q.k with any position terms) -> [B, H, Tq, Tk]:
//   out[b, h, i, j] = mask_mod(b, h, q_offset + i, j, ...) ? score_mod(scores[b, h, i, j], ...) : -inf
// (score unchanged without score_mod, every score kept without mask_mod). Differentiable in the
// scores and in the call's tensors (learned ones receive d out / d element summed over every score
// that reads it, in a fixed order: the same bits for any thread count). CPU, f32 and f64.
Tensor apply_score_expr(const Tensor& scores, const expr::ScoreExprCall& call);

}  // namespace attnlab
