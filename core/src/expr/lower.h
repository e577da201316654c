#pragma once
// From an expression's text to program nodes (lower.cpp): parsed, names and types checked,
// tensor indices proven in range over the limits. Each returns the node of the result.
#include "expr/ast.h"
#include "expr/ir.h"

namespace attnlab::expr {

// score_mod's result as a real node (an integer result is converted).
int lower_score_mod(Program& program, const ExprText& source, const std::vector<TensorSpec>& tensors,
                    const Limits& limits);
// mask_mod's result: a boolean node.
int lower_mask_mod(Program& program, const ExprText& source, const std::vector<TensorSpec>& tensors,
                   const Limits& limits);

}  // namespace attnlab::expr
