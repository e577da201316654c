#include "attnlab/plugin/attention_support.h"

#include <algorithm>

#include "attnlab/error.h"

namespace attnlab {
namespace {

template <typename T>
bool contains(const std::vector<T>& values, const T& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::string device_kinds(const AttentionCapabilities& caps) {
  std::vector<std::string_view> kinds;
  for (const auto& d : caps.devices) kinds.push_back(device_kind_name(d.device));
  return kinds.empty() ? std::string("none") : fmt::format("{}", fmt::join(kinds, ", "));
}

}  // namespace

std::string describe_attention_support(const AttentionDeviceSupport& s) {
  std::vector<std::string_view> dtypes;
  for (DType t : s.dtypes) dtypes.push_back(dtype_name(t));
  std::vector<std::string_view> features;
  if (s.padding_mask) features.push_back("padding mask");
  if (s.causal)
    features.push_back(s.causal_longer_padded_keys ? "causal" : "causal (not over a longer padded key sequence)");
  if (s.incremental) features.push_back("incremental");
  if (s.attention_dropout) features.push_back("attention dropout");
  if (s.score_expressions) features.push_back("score expressions");
  return fmt::format("{}; head sizes {}; {}; positions: {}{}", dtypes.empty() ? std::string("no dtype") : fmt::format("{}", fmt::join(dtypes, ", ")),
                     s.head_dims.empty() ? std::string("any") : fmt::format("{}", fmt::join(s.head_dims, ", ")),
                     features.empty() ? std::string("no masks") : fmt::format("{}", fmt::join(features, ", ")),
                     s.positions.describe(),
                     s.compute_dtype ? fmt::format("; computes in {}", dtype_name(*s.compute_dtype)) : std::string());
}

std::optional<std::string> check_attention_support(const PluginInfo& info, Device device, DType dtype,
                                                   std::int64_t d_k, std::int64_t d_v, const AttentionNeeds& needs) {
  ATTNLAB_CHECK(info.family == PluginFamily::attention, "check_attention_support: {} plugin '{}' is not an attention plugin",
                family_name(info.family), info.name);
  const std::string_view kind = device_kind_name(device.kind);
  const AttentionDeviceSupport* s = info.capabilities.on(device.kind);
  if (!s)
    return fmt::format("attention plugin '{}' does not run on {} (it runs on: {})", info.name, kind,
                       device_kinds(info.capabilities));
  std::vector<std::string> missing;
  if (!contains(s->dtypes, dtype)) missing.push_back(fmt::format("dtype {}", dtype_name(dtype)));
  if (!s->head_dims.empty()) {
    if (!contains(s->head_dims, d_k)) missing.push_back(fmt::format("head size d_k = {}", d_k));
    if (!contains(s->head_dims, d_v)) missing.push_back(fmt::format("head size d_v = {}", d_v));
  }
  if (needs.padding_mask && !s->padding_mask) missing.push_back("padding masks");
  if (needs.causal && !s->causal) missing.push_back("causal masking");
  if (needs.causal_longer_padded_keys && s->causal && !s->causal_longer_padded_keys)
    missing.push_back("causal queries over a longer padded key sequence");
  if (needs.incremental && !s->incremental) missing.push_back("incremental decoding");
  if (needs.attention_dropout && !s->attention_dropout) missing.push_back("attention dropout");
  if (needs.score_expressions && !s->score_expressions) missing.push_back("score expressions (score_mod, mask_mod)");
  if (const PositionHooks gap = needs.positions.missing_from(s->positions); gap.any())
    missing.push_back(fmt::format("position {} (positional plugin '{}' uses them)", gap.describe(), needs.positional));
  const PositionHooks& p = needs.positions;
  if (s->positions.kernel_form && !p.kernel_form && ((p.score_terms && s->positions.score_terms) ||
                                                     (p.value_terms && s->positions.value_terms)))
    missing.push_back(fmt::format("position terms outside kernel form (positional plugin '{}' gives its terms as "
                                  "tensors only)", needs.positional));
  if (missing.empty()) return std::nullopt;
  return fmt::format("attention plugin '{}' does not support {} on {} (it supports on {}: {})", info.name,
                     fmt::join(missing, ", "), kind, kind, describe_attention_support(*s));
}

}  // namespace attnlab
