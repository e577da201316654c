#pragma once
// Helpers of the score expression tests: a site's expressions from text, tensor declarations,
// and the message an expression's ExprError carries.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attnlab/expr/score_expr.h"

namespace expr_testing {

using namespace attnlab::expr;

inline ExprText text(const std::string& t, const std::string& key = "model.attention.score_mod") {
  return {t, {"exp.toml", 12, 13, key}};
}

inline TensorSpec tensor(const std::string& name, std::vector<std::int64_t> shape, bool learned = false,
                         TensorInit init = TensorInit::zeros) {
  TensorSpec t;
  t.name = name;
  t.shape = std::move(shape);
  t.learned = learned;
  t.init = init;
  return t;
}

inline Limits limits(std::int64_t heads = 4, std::int64_t max_length = 64) { return {heads, max_length}; }

inline std::shared_ptr<const ScoreExpr> build(const std::string& score_mod, const std::string& mask_mod = "",
                                              const std::vector<TensorSpec>& tensors = {},
                                              const Limits& lim = limits()) {
  SiteExprs site;
  if (!score_mod.empty()) site.score_mod = text(score_mod);
  if (!mask_mod.empty()) site.mask_mod = text(mask_mod, "model.attention.mask_mod");
  return ScoreExpr::build(site, tensors, lim);
}

// The message of the ExprError that building throws ("" when it builds).
inline std::string error_of(const std::string& score_mod, const std::string& mask_mod = "",
                            const std::vector<TensorSpec>& tensors = {}, const Limits& lim = limits()) {
  try {
    build(score_mod, mask_mod, tensors, lim);
  } catch (const ExprError& e) {
    return e.what();
  }
  return "";
}

}  // namespace expr_testing
