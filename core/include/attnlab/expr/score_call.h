#pragma once
// What one attention call's expressions read besides its scores: the site's program, the values of
// its tensors (a layer's parameters for learned ones), where the call's queries sit, and each
// sentence's unpadded lengths.
#include <cstdint>
#include <memory>
#include <vector>

#include "attnlab/expr/score_expr.h"
#include "attnlab/tensor.h"

namespace attnlab::expr {

struct ScoreExprCall {
  std::shared_ptr<const ScoreExpr> expr;
  // The values of expr->tensors(), in order, each of its declared shape, on the scores' device.
  std::vector<Tensor> tensors;
  // q_idx of the call's first query; keys sit at kv_idx 0 .. Tk - 1 (incremental decoding: the
  // new step follows the cached positions, q_offset = Tk - Tq).
  std::int64_t q_offset = 0;
  // q_len and kv_len of each batch row, i32 or i64 [B] on the CPU; undefined: q_offset + Tq for
  // every row, and Tk.
  Tensor q_lengths{};
  Tensor kv_lengths{};
};

// Checks the call against scores of batch B, H heads, Tq queries and Tk keys: every tensor given
// with its declared shape, the positions and lengths within the limits the expressions' indices
// were proven for. The Error names `who` and what is wrong.
void check_call(const char* who, const ScoreExprCall& call, std::int64_t batch, std::int64_t heads, std::int64_t tq,
                std::int64_t tk);

// The lengths as i64 on the host: given, or the defaults above.
std::vector<std::int64_t> query_lengths(const ScoreExprCall& call, std::int64_t batch, std::int64_t tq);
std::vector<std::int64_t> key_lengths(const ScoreExprCall& call, std::int64_t batch, std::int64_t tk);

}  // namespace attnlab::expr
