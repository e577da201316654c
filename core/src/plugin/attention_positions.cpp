#include "attnlab/plugin/attention_positions.h"

#include <vector>

#include "attnlab/plugin/positional.h"
#include <fmt/format.h>

namespace attnlab {

std::string PositionHooks::describe() const {
  std::vector<std::string> parts;
  if (rotate) parts.emplace_back("rotation");
  if (score_terms) parts.emplace_back("score terms");
  if (value_terms) parts.emplace_back("value terms");
  if (parts.empty()) return "none";
  const bool terms = score_terms || value_terms;
  return fmt::format("{}{}", fmt::join(parts, ", "), kernel_form && terms ? " (kernel form)" : "");
}

Tensor AttentionPositions::rotate(const Tensor& x, std::int64_t) const { return x; }
Tensor AttentionPositions::score_terms(const Tensor& q, std::int64_t q_offset, std::int64_t keys) const {
  return expand_score_terms(kernel_score_terms(q, q_offset, keys), q, q_offset, keys);
}
Tensor AttentionPositions::value_terms(const Tensor& weights, std::int64_t q_offset) const {
  return expand_value_terms(kernel_value_terms(), weights, q_offset);
}
KernelScoreTerms AttentionPositions::kernel_score_terms(const Tensor&, std::int64_t, std::int64_t) const { return {}; }
KernelValueTerms AttentionPositions::kernel_value_terms() const { return {}; }

std::shared_ptr<AttentionPositions> PositionalEncoding::attention_positions(const BuildContext&) const {
  return nullptr;
}

}  // namespace attnlab
