#pragma once
// Attention variants written as score expressions, for tests of the kernels that apply them (the
// conformance kit, the emulated and real CUDA kernels, the model): a variant is its two
// expressions and its tensors, built as an experiment file's [model.attention] would be.
#include <cstdint>
#include <memory>
#include <vector>

#include "attnlab/expr/score_expr.h"

namespace attnlab::testing {

struct ExpressionVariant {
  const char* name;
  const char* score_mod;  // "" : none
  const char* mask_mod;   // "" : none
  std::vector<expr::TensorSpec> tensors;
};

// A tensor whose first size is the head count (written "heads"), the others as given; `normal`
// draws with standard deviation 0.5, large enough to change the scores visibly.
expr::TensorSpec head_tensor(const char* name, std::vector<std::int64_t> shape, expr::TensorInit init, bool learned,
                             std::vector<double> values = {});

// The variant's expressions checked and lowered for `heads` heads and positions below
// `max_length` (an Error for a variant that does not check).
std::shared_ptr<const expr::ScoreExpr> build_variant(const ExpressionVariant& variant, std::int64_t heads,
                                                     std::int64_t max_length);

}  // namespace attnlab::testing
