#include "attnlab/nmt/model/parameter_count.h"

namespace attnlab::nmt {

ParameterCount count_parameters(const TransformerConfig& config, const Registry& registry) {
  Generator init(1), dropout_rng(1);
  BuildContext ctx;
  ctx.dims = config.dims;
  ctx.dropout = config.dropout;
  ctx.init = &init;
  ctx.dropout_rng = &dropout_rng;
  ctx.registry = &registry;
  ctx.dropout_plugin = config.dropout_plugin.name;
  ctx.dropout_options = config.dropout_plugin.options;
  auto with = [&](PluginFamily family, const PluginChoice& choice) {
    BuildContext c = ctx;
    c.options = Options::with_defaults(registry.find(family, choice.name).options, choice.options);
    return c;
  };
  ParameterCount p;
  p.embedding = config.vocab_size * config.dims.d_model;
  p.attention = registry.make_attention(config.attention.name, with(PluginFamily::attention, config.attention))
                    ->parameter_count();
  p.ffn = registry.make_ffn(config.ffn.name, with(PluginFamily::ffn, config.ffn))->parameter_count();
  const auto positional =
      registry.make_positional(config.positional.name, with(PluginFamily::positional, config.positional));
  p.positional = positional->parameter_count();
  if (auto inside = positional->attention_positions(ctx)) p.attention_positions = inside->parameter_count();
  BuildContext norm_ctx = with(PluginFamily::norm, config.norm);
  norm_ctx.norm_eps = config.layer_norm_eps;
  p.norm = registry.make_norm(config.norm.name, norm_ctx)->parameter_count();
  p.expressions = expression_parameter_count(config);
  p.total = p.expressions + p.embedding + config.encoder_layers * (p.attention + p.attention_positions + p.ffn + 2 * p.norm) +
            config.decoder_layers * (2 * p.attention + p.attention_positions + p.ffn + 3 * p.norm) +
            2 * p.positional + stack_norm_count(config) * p.norm;
  return p;
}

}  // namespace attnlab::nmt
