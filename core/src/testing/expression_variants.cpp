#include "attnlab/testing/expression_variants.h"

#include <utility>

namespace attnlab::testing {

expr::TensorSpec head_tensor(const char* name, std::vector<std::int64_t> shape, expr::TensorInit init, bool learned,
                             std::vector<double> values) {
  expr::TensorSpec t;
  t.name = name;
  t.shape = std::move(shape);
  t.per_head.assign(t.shape.size(), false);
  t.per_head[0] = true;
  t.init = init;
  t.std = 0.5;
  t.learned = learned;
  t.values = std::move(values);
  return t;
}

std::shared_ptr<const expr::ScoreExpr> build_variant(const ExpressionVariant& variant, std::int64_t heads,
                                                     std::int64_t max_length) {
  expr::SiteExprs site;
  site.score_mod.text = variant.score_mod;
  site.mask_mod.text = variant.mask_mod;
  return expr::ScoreExpr::build(site, variant.tensors, {heads, max_length});
}

}  // namespace attnlab::testing
