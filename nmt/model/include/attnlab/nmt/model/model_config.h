#pragma once
// The hyperparameters of the encoder-decoder Transformer and the plugins it is built from.
#include <cstdint>
#include <map>
#include <string>

#include "attnlab/expr/score_expr.h"
#include "attnlab/nmt/model/norm_position.h"
#include "attnlab/plugin/context.h"
#include "attnlab/plugin/options.h"

namespace attnlab {
class Registry;
}

namespace attnlab::nmt {

// A plugin chosen by name, with the values of its options (validated against its declaration).
struct PluginChoice {
  std::string name;
  std::map<std::string, OptionValue> options;
  // Attention only: the plugin that builds the attention layers when `name` cannot serve the
  // model (its device, compute dtype, d_k or d_v; see resolve_attention). Empty: none.
  std::string fallback;
};

// The attention sites of the Transformer, each with its own expressions.
enum class AttentionSite : std::uint8_t { encoder, decoder, cross };
inline constexpr AttentionSite kAttentionSites[] = {AttentionSite::encoder, AttentionSite::decoder,
                                                    AttentionSite::cross};
const char* attention_site_name(AttentionSite site);  // "encoder", "decoder", "cross"

// Score expressions of [model.attention] (docs/score-expressions.md): score_mod and mask_mod of each
// site (encoder self-attention, decoder self-attention, cross-attention; the table's own apply to
// all three, [model.attention.encoder] and the others override them), and the tensors they read.
struct AttentionExpressions {
  expr::SiteExprs encoder, decoder, cross;
  std::vector<expr::TensorSpec> tensors;
  bool any() const { return encoder.any() || decoder.any() || cross.any(); }
  const expr::SiteExprs& site(AttentionSite s) const;
};

struct TransformerConfig {
  std::int64_t vocab_size = 37000;  // shared source-target vocabulary
  std::int64_t encoder_layers = 6;  // N
  std::int64_t decoder_layers = 6;
  ModelDims dims;        // d_model 512, h 8, d_k = d_v = 64, d_ff 2048
  DropoutRates dropout;  // residual 0.1, embedding 0.1
  double layer_norm_eps = 1e-6;
  std::int64_t pad_id = 0;
  PluginChoice attention{"scaled_dot", {}, {}};
  PluginChoice positional{"sinusoidal", {}, {}};
  PluginChoice ffn{"relu", {}, {}};
  PluginChoice dropout_plugin{"standard", {}, {}};
  // The norm of the residual blocks (a plugin: "layer_norm", the paper's, or "rms_norm") and where
  // it sits (norm_position.h): post (the paper: LayerNorm(x + Dropout(Sublayer(x)))), pre
  // (x + Dropout(Sublayer(Norm(x))), and one more norm at the top of each stack) or deepnorm.
  PluginChoice norm{"layer_norm", {}, {}};
  NormPosition norm_position = NormPosition::post;
  // Fused kernels where they change nothing but speed: with the built-in "standard" dropout
  // plugin and a norm the core's fused kernel computes (layer_norm), each post-norm sub-layer
  // LayerNorm(x + Dropout(y)) is one dropout_add_layer_norm call that draws the same dropout
  // masks from the same stream.
  bool fused_kernels = true;
  // Score expressions applied by the attention plugin (none by default).
  AttentionExpressions expressions;
};

// The site's expressions built (parsed, checked for the model's heads and max_length), or null
// when the site has none. Throws the expressions' ExprError.
std::shared_ptr<const expr::ScoreExpr> site_expressions(const TransformerConfig& config, AttentionSite site);

// Loads (compiling into the kernel cache first where they are not there) the CPU kernels of every
// site's expressions; one line for the log saying which were compiled now and which were cached,
// "" without expressions. Throws the compiler's Error.
std::string prepare_expression_kernels(const TransformerConfig& config);

// The parameters the expressions' learned tensors add to the model: each attention layer of a site
// holds those its site's expressions read.
std::int64_t expression_parameter_count(const TransformerConfig& config);

// The attention plugin that builds a model's attention layers on `device` in `dtype`.
struct AttentionResolution {
  PluginChoice choice;  // config.attention, or the fallback with the options it declares
  std::string notice;   // empty, or one line saying why the fallback serves the model
};

// config.attention when its registered capabilities serve the model (device, dtype, d_k, d_v,
// padding masks, causal masking, incremental decoding, and attention dropout when its rate is
// above 0); else config.attention.fallback, which receives the options of the table that it
// declares. Throws an Error naming the plugin, what it does not support, what it supports and
// the `fallback` key when there is no fallback, naming both plugins when the fallback cannot
// serve either, and listing the attention plugins when the fallback is unknown.
AttentionResolution resolve_attention(const TransformerConfig& config, const Registry& registry, Device device,
                                      DType dtype);

// The paper's base model (Table 3, first row) with vocabulary size `vocab`.
TransformerConfig paper_base_config(std::int64_t vocab = 37000);

// The norms at the top of the stacks: pre-norm adds one to each stack (to the encoder only when it
// has layers); the others none.
std::int64_t stack_norm_count(const TransformerConfig& config);

// Parameters of a configuration without building it (embedding, encoder, decoder), for the
// built-in plugins' layouts; the built model's parameter_count() is the authority.
std::int64_t expected_parameter_count(const TransformerConfig& config);

}  // namespace attnlab::nmt
