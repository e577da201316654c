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
  return parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, ", "));
}

Tensor AttentionPositions::rotate(const Tensor& x, std::int64_t) const { return x; }
Tensor AttentionPositions::score_terms(const Tensor&, std::int64_t, std::int64_t) const { return {}; }
Tensor AttentionPositions::value_terms(const Tensor&, std::int64_t) const { return {}; }

std::shared_ptr<AttentionPositions> PositionalEncoding::attention_positions(const BuildContext&) const {
  return nullptr;
}

}  // namespace attnlab
