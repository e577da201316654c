#include "attnlab/nmt/model/model_config.h"

#include "attnlab/error.h"
#include "attnlab/plugin/attention_support.h"

namespace attnlab::nmt {

AttentionResolution resolve_attention(const TransformerConfig& config, const Registry& registry, Device device,
                                      DType dtype) {
  const AttentionNeeds needs{.attention_dropout = config.dropout.attention > 0.0,
                             .score_expressions = config.expressions.any(),
                             .positions = registry.find(PluginFamily::positional, config.positional.name).positions,
                             .positional = config.positional.name};
  const PluginChoice& primary = config.attention;
  const std::optional<std::string> problem = check_attention_support(
      registry.find(PluginFamily::attention, primary.name), device, dtype, config.dims.d_k, config.dims.d_v, needs);
  const PluginInfo* fallback =
      primary.fallback.empty() ? nullptr : &registry.find(PluginFamily::attention, primary.fallback);
  if (!problem) return {primary, {}};
  if (!fallback || primary.fallback == primary.name)
    throw Error(fmt::format("{}; set fallback = \"scaled_dot\" (or another attention plugin) in [model.attention] "
                            "to run such models with it",
                            *problem));
  if (auto other = check_attention_support(*fallback, device, dtype, config.dims.d_k, config.dims.d_v, needs))
    throw Error(fmt::format("{}, and neither does its fallback: {}", *problem, *other));
  AttentionResolution r;
  r.choice.name = fallback->name;
  for (const auto& spec : fallback->options)
    if (auto it = primary.options.find(spec.name); it != primary.options.end()) r.choice.options[spec.name] = it->second;
  r.notice = fmt::format("{}: using its fallback '{}'", *problem, fallback->name);
  return r;
}

const char* attention_site_name(AttentionSite site) {
  switch (site) {
    case AttentionSite::encoder: return "encoder";
    case AttentionSite::decoder: return "decoder";
    case AttentionSite::cross: return "cross";
  }
  return "?";
}

const expr::SiteExprs& AttentionExpressions::site(AttentionSite s) const {
  switch (s) {
    case AttentionSite::encoder: return encoder;
    case AttentionSite::decoder: return decoder;
    case AttentionSite::cross: return cross;
  }
  return encoder;
}

std::shared_ptr<const expr::ScoreExpr> site_expressions(const TransformerConfig& config, AttentionSite site) {
  const expr::SiteExprs& s = config.expressions.site(site);
  if (!s.any()) return nullptr;
  return expr::ScoreExpr::build(s, config.expressions.tensors, {config.dims.n_heads, config.dims.max_length});
}

std::int64_t expression_parameter_count(const TransformerConfig& config) {
  std::int64_t total = 0;
  for (AttentionSite site : kAttentionSites) {
    const auto e = site_expressions(config, site);
    if (!e) continue;
    std::int64_t per_layer = 0;
    for (const auto& t : e->tensors())
      if (t.learned) per_layer += t.numel();
    total += per_layer * (site == AttentionSite::encoder ? config.encoder_layers : config.decoder_layers);
  }
  return total;
}

TransformerConfig paper_base_config(std::int64_t vocab) {
  TransformerConfig c;
  c.vocab_size = vocab;
  return c;
}

std::int64_t expected_parameter_count(const TransformerConfig& c) {
  const std::int64_t d = c.dims.d_model, h = c.dims.n_heads, dk = c.dims.d_k, dv = c.dims.d_v, ff = c.dims.d_ff;
  // scaled_dot with biases: W_q, W_k [h d_k, d], W_v [h d_v, d], W_o [d, h d_v] and their biases.
  const std::int64_t attention = 2 * (h * dk * d + h * dk) + (h * dv * d + h * dv) + (d * h * dv + d);
  const std::int64_t ffn = (d * ff + ff) + (ff * d + d);  // relu / gelu
  const std::int64_t norm = c.norm.name == "rms_norm" ? d : 2 * d;  // gain (and bias for layer_norm)
  const std::int64_t encoder = c.encoder_layers * (attention + ffn + 2 * norm);
  const std::int64_t decoder = c.decoder_layers * (2 * attention + ffn + 3 * norm);
  return c.vocab_size * d + encoder + decoder + stack_norm_count(c) * norm + expression_parameter_count(c);
}

std::int64_t stack_norm_count(const TransformerConfig& c) {
  if (c.norm_position != NormPosition::pre) return 0;
  return c.encoder_layers > 0 ? 2 : 1;
}

}  // namespace attnlab::nmt
