#include "attnlab/nmt/model/transformer.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "attnlab/autograd.h"
#include "attnlab/init.h"
#include "attnlab/ops.h"
#include "attnlab/plugin/attention_util.h"

namespace attnlab::nmt {
namespace {

BuildContext plugin_context(BuildContext ctx, const Registry& registry, PluginFamily family,
                            const PluginChoice& choice) {
  ctx.options = Options::with_defaults(registry.find(family, choice.name).options, choice.options);
  return ctx;
}

// The attention of `site`, with that site's score expressions.
std::shared_ptr<Attention> make_attention(const BuildContext& ctx, const TransformerConfig& config,
                                          AttentionSite site) {
  BuildContext c = plugin_context(ctx, *ctx.registry, PluginFamily::attention, config.attention);
  c.score_expr = site_expressions(config, site);
  return ctx.registry->make_attention(config.attention.name, c);
}

// The unpadded length of each row of ids [B, T] (i32 [B]): the tokens that are not padding.
Tensor unpadded_lengths(const Tensor& ids, std::int64_t pad_id) {
  NoGradGuard no_grad;
  return sum(index_mask(ids, pad_id, 0.0, 1.0, DType::f32), 1).to(DType::i32);
}

std::shared_ptr<FeedForward> make_ffn(const BuildContext& ctx, const TransformerConfig& config) {
  return ctx.registry->make_ffn(config.ffn.name, plugin_context(ctx, *ctx.registry, PluginFamily::ffn, config.ffn));
}

std::shared_ptr<Norm> make_norm(const BuildContext& ctx, const TransformerConfig& config) {
  BuildContext c = plugin_context(ctx, *ctx.registry, PluginFamily::norm, config.norm);
  c.norm_eps = config.layer_norm_eps;
  return ctx.registry->make_norm(config.norm.name, c);
}

// The dropout stream for fused blocks, or null for the plugins' own path: fusion reproduces the
// built-in "standard" dropout plugin and a norm that offers the core's kernel (layer_norm,
// rms_norm) only.
Generator* fused_stream(const BuildContext& ctx, const TransformerConfig& config, const Norm& norm) {
  const bool fused =
      config.fused_kernels && config.dropout_plugin.name == "standard" && norm.fusable().has_value();
  return fused ? ctx.dropout_rng : nullptr;
}

ResidualForm residual_form(const TransformerConfig& config, bool decoder) {
  switch (config.norm_position) {
    case NormPosition::post: return {.pre_norm = false};
    case NormPosition::pre: return {.pre_norm = true};
    case NormPosition::deepnorm: break;
  }
  const DeepNormScales s = deepnorm_scales(config.encoder_layers, config.decoder_layers);
  return {.pre_norm = false,
          .alpha = decoder ? s.decoder_alpha : s.encoder_alpha,
          .beta = decoder ? s.decoder_beta : s.encoder_beta};
}

// DeepNorm's initialisation: the parameters of `module` whose names `chosen` accepts (matrices
// only), multiplied by form.beta in place. It draws nothing, so a DeepNorm model's weights are
// those of the same post-norm model, scaled.
template <typename Chosen>
void scale_initial_weights(const ResidualForm& form, Module& module, Chosen&& chosen) {
  if (form.beta == 1.0) return;
  const double beta = form.beta;
  NoGradGuard no_grad;
  for (auto& [name, p] : module.named_parameters()) {
    if (p.rank() < 2 || !chosen(std::string_view(name))) continue;
    Tensor target = p;
    add_inplace(target, scale(p, beta - 1.0));  // p + (beta - 1) p: the storage every handle shares
  }
}

// Attention's value and output projections (the core's projection helper names them w_v, w_o);
// the query and key projections keep their scale, as DeepNet does.
bool value_or_output_projection(std::string_view name) {
  std::string dotted(1, '.');
  dotted += name;
  return dotted.find(".w_v.") != std::string::npos || dotted.find(".w_o.") != std::string::npos;
}

// Post-norm: Norm(alpha residual + Dropout(branch)). Fused, it draws from the stream exactly when
// and as much as the standard plugin's forward does (in training at a rate > 0: dropout(branch,
// rate, stream)), so the masks, and with them the whole run, are those of the unfused path.
Tensor add_norm(Norm& norm, Dropout& drop, const Tensor& residual, double alpha, const Tensor& branch,
                Generator* fused_rng) {
  if (!fused_rng) {
    const Tensor r = alpha == 1.0 ? residual : scale(residual, alpha);
    return norm.forward(add(r, drop.forward(branch)));
  }
  const FusableNorm f = *norm.fusable();
  const DropoutAddLayerNormInputs in{.x = branch,
                                     .bias = Tensor(),
                                     .residual = residual,
                                     .gamma = f.gamma,
                                     .beta = f.beta,
                                     .residual_scale = alpha,
                                     .centered = f.centered};
  if (drop.training() && drop.rate() > 0.0) return dropout_add_layer_norm(in, drop.rate(), *fused_rng, f.eps);
  return dropout_add_layer_norm(in, 0.0, 0, 0, f.eps);
}

// Pre-norm, fused: residual + Dropout(branch) and `next` of it in one pass, drawing from the stream
// exactly as the standard plugin's forward does.
DropoutAddNormPair add_then_norm(Dropout& drop, const Tensor& residual, const Tensor& branch, Norm& next,
                                 Generator& rng) {
  const FusableNorm f = *next.fusable();
  const DropoutAddLayerNormInputs in{
      .x = branch, .bias = Tensor(), .residual = residual, .gamma = f.gamma, .beta = f.beta, .centered = f.centered};
  if (drop.training() && drop.rate() > 0.0) return dropout_add_norm_pair(in, drop.rate(), rng, f.eps);
  return dropout_add_norm_pair(in, 0.0, 0, 0, f.eps);
}

// One residual block around `sublayer`: post-norm Norm(alpha x + Dropout(sublayer(x))) (alpha 1
// but in DeepNorm) or pre-norm x + Dropout(sublayer(Norm(x))).
template <typename F>
Tensor residual_block(const ResidualForm& form, Norm& norm, Dropout& drop, const Tensor& x, Generator* fused_rng,
                      F&& sublayer) {
  if (form.pre_norm) return add(x, drop.forward(sublayer(norm.forward(x))));
  return add_norm(norm, drop, x, form.alpha, sublayer(x), fused_rng);
}

}  // namespace

DeepNormScales deepnorm_scales(std::int64_t encoder_layers, std::int64_t decoder_layers) {
  ATTNLAB_CHECK(encoder_layers >= 0 && decoder_layers > 0, "deepnorm_scales: {} encoder and {} decoder layers",
                encoder_layers, decoder_layers);
  const auto n = static_cast<double>(encoder_layers), m = static_cast<double>(decoder_layers);
  DeepNormScales s;
  if (encoder_layers == 0) {
    s.decoder_alpha = std::pow(2.0 * m, 0.25);
    s.decoder_beta = std::pow(8.0 * m, -0.25);
    return s;
  }
  const double nm = std::pow(n, 4.0) * m;
  s.encoder_alpha = 0.81 * std::pow(nm, 1.0 / 16.0);
  s.encoder_beta = 0.87 * std::pow(nm, -1.0 / 16.0);
  s.decoder_alpha = std::pow(3.0 * m, 0.25);
  s.decoder_beta = std::pow(12.0 * m, -0.25);
  return s;
}

Tensor padding_mask(const Tensor& ids, std::int64_t pad_id, DType dtype) {
  ATTNLAB_CHECK(ids.rank() == 2, "padding_mask: ids must be [batch, length], got {}", ids.shape().str());
  // Made where the ids are: on CUDA without reading them back to the host.
  return index_mask(ids, pad_id, -std::numeric_limits<double>::infinity(), 0.0, dtype);
}

EncoderLayer::EncoderLayer(const BuildContext& ctx, const TransformerConfig& config,
                           const PositionalEncoding& positional) {
  self_attn_ = register_module("self_attn", make_attention(ctx, config, AttentionSite::encoder));
  if (auto p = positional.attention_positions(ctx)) positions_ = register_module("self_attn_positions", p);
  drop1_ = register_module("dropout1", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm1_ = register_module("norm1", make_norm(ctx, config));
  ffn_ = register_module("ffn", make_ffn(ctx, config));
  drop2_ = register_module("dropout2", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm2_ = register_module("norm2", make_norm(ctx, config));
  form_ = residual_form(config, false);
  fused_rng_ = fused_stream(ctx, config, *norm1_);
  scale_initial_weights(form_, *self_attn_, value_or_output_projection);
  scale_initial_weights(form_, *ffn_, [](std::string_view) { return true; });
}

Tensor EncoderLayer::attend(const Tensor& in, const Tensor& src_mask, const SentenceLengths& lengths) {
  return self_attn_->forward({.query = in,
                              .key = in,
                              .value = in,
                              .key_padding_mask = src_mask,
                              .positions = positions_.get(),
                              .query_lengths = lengths.src,
                              .key_lengths = lengths.src});
}

Tensor EncoderLayer::forward(const Tensor& x, const Tensor& src_mask, const SentenceLengths& lengths) {
  Tensor h = residual_block(form_, *norm1_, *drop1_, x, fused_rng_,
                            [&](const Tensor& in) { return attend(in, src_mask, lengths); });
  return residual_block(form_, *norm2_, *drop2_, h, fused_rng_, [&](const Tensor& in) { return ffn_->forward(in); });
}

DropoutAddNormPair EncoderLayer::forward_pre_fused(const Tensor& x, Tensor xn, const Tensor& src_mask, Norm& next,
                                                   const SentenceLengths& lengths) {
  ATTNLAB_CHECK(fused_pre(), "EncoderLayer::forward_pre_fused: the layer is not a fused pre-norm layer");
  if (!xn.defined()) xn = norm1_->forward(x);
  const DropoutAddNormPair h = add_then_norm(*drop1_, x, attend(xn, src_mask, lengths), *norm2_, *fused_rng_);
  return add_then_norm(*drop2_, h.sum, ffn_->forward(h.normed), next, *fused_rng_);
}

DecoderLayer::DecoderLayer(const BuildContext& ctx, const TransformerConfig& config,
                           const PositionalEncoding& positional) {
  self_attn_ = register_module("self_attn", make_attention(ctx, config, AttentionSite::decoder));
  if (auto p = positional.attention_positions(ctx)) positions_ = register_module("self_attn_positions", p);
  drop1_ = register_module("dropout1", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm1_ = register_module("norm1", make_norm(ctx, config));
  cross_attn_ = register_module("cross_attn", make_attention(ctx, config, AttentionSite::cross));
  drop2_ = register_module("dropout2", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm2_ = register_module("norm2", make_norm(ctx, config));
  ffn_ = register_module("ffn", make_ffn(ctx, config));
  drop3_ = register_module("dropout3", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm3_ = register_module("norm3", make_norm(ctx, config));
  form_ = residual_form(config, true);
  fused_rng_ = fused_stream(ctx, config, *norm1_);
  scale_initial_weights(form_, *self_attn_, value_or_output_projection);
  scale_initial_weights(form_, *cross_attn_, value_or_output_projection);
  scale_initial_weights(form_, *ffn_, [](std::string_view) { return true; });
}

Tensor DecoderLayer::attend_self(const Tensor& in, DecoderLayerState* state, const SentenceLengths& lengths) {
  Tensor out = self_attn_->forward({.query = in,
                                    .key = in,
                                    .value = in,
                                    .causal = true,
                                    .cache = state ? &state->self_attn : nullptr,
                                    .positions = positions_.get(),
                                    .query_lengths = lengths.tgt,
                                    .key_lengths = lengths.tgt});
  if (state) state->cross_attn.static_kv = true;
  return out;
}

Tensor DecoderLayer::attend_cross(const Tensor& in, const Tensor& memory, const Tensor& src_mask,
                                  DecoderLayerState* state, const SentenceLengths& lengths) {
  return cross_attn_->forward({.query = in,
                               .key = memory,
                               .value = memory,
                               .key_padding_mask = src_mask,
                               .cache = state ? &state->cross_attn : nullptr,
                               .query_lengths = lengths.tgt,
                               .key_lengths = lengths.src,
                               .query_offset = lengths.tgt_offset});
}

Tensor DecoderLayer::forward(const Tensor& y, const Tensor& memory, const Tensor& src_mask,
                             DecoderLayerState* state, const SentenceLengths& lengths) {
  Tensor h = residual_block(form_, *norm1_, *drop1_, y, fused_rng_,
                            [&](const Tensor& in) { return attend_self(in, state, lengths); });
  Tensor g = residual_block(form_, *norm2_, *drop2_, h, fused_rng_,
                            [&](const Tensor& in) { return attend_cross(in, memory, src_mask, state, lengths); });
  return residual_block(form_, *norm3_, *drop3_, g, fused_rng_, [&](const Tensor& in) { return ffn_->forward(in); });
}

DropoutAddNormPair DecoderLayer::forward_pre_fused(const Tensor& y, Tensor yn, const Tensor& memory,
                                                   const Tensor& src_mask, DecoderLayerState* state, Norm& next,
                                                   const SentenceLengths& lengths) {
  ATTNLAB_CHECK(fused_pre(), "DecoderLayer::forward_pre_fused: the layer is not a fused pre-norm layer");
  if (!yn.defined()) yn = norm1_->forward(y);
  const DropoutAddNormPair h = add_then_norm(*drop1_, y, attend_self(yn, state, lengths), *norm2_, *fused_rng_);
  const Tensor c = attend_cross(h.normed, memory, src_mask, state, lengths);
  const DropoutAddNormPair g = add_then_norm(*drop2_, h.sum, c, *norm3_, *fused_rng_);
  return add_then_norm(*drop3_, g.sum, ffn_->forward(g.normed), next, *fused_rng_);
}

void DecoderState::reorder(const std::vector<std::int64_t>& rows) {
  for (auto& layer : layers) {
    layer.self_attn.reorder(rows);
    layer.cross_attn.reorder(rows);
  }
}

Transformer::Transformer(const TransformerConfig& config, const Registry& registry, Generator& init,
                         Generator& dropout_rng, DType dtype, Device device)
    : config_(config), attention_(resolve_attention(config, registry, device, dtype)), dtype_(dtype), device_(device) {
  ATTNLAB_CHECK(config.vocab_size > 0 && config.encoder_layers >= 0 && config.decoder_layers > 0,
                "transformer: vocab_size {} must be > 0, encoder_layers {} >= 0, decoder_layers {} > 0",
                config.vocab_size, config.encoder_layers, config.decoder_layers);
  TransformerConfig layers = config;  // what the layers build: the resolved attention plugin
  layers.attention = attention_.choice;
  BuildContext ctx;
  ctx.dims = config.dims;
  ctx.dropout = config.dropout;
  ctx.device = device;
  ctx.dtype = dtype;
  ctx.init = &init;
  ctx.dropout_rng = &dropout_rng;
  ctx.registry = &registry;
  ctx.dropout_plugin = config.dropout_plugin.name;
  ctx.dropout_options = config.dropout_plugin.options;
  ctx.training_step = &training_step_;
  ctx.seed = init.seed();

  const auto d = config.dims.d_model;
  // E ~ N(0, d^-1/2): after the sqrt(d) scale the embeddings have unit variance.
  embedding_ = register_parameter(
      "embedding", normal({config.vocab_size, d}, 0.0, 1.0 / std::sqrt(static_cast<double>(d)), init, dtype, device));
  const BuildContext pos_ctx = plugin_context(ctx, registry, PluginFamily::positional, config.positional);
  src_positional_ = register_module("src_positional", registry.make_positional(config.positional.name, pos_ctx));
  tgt_positional_ = register_module("tgt_positional", registry.make_positional(config.positional.name, pos_ctx));
  src_dropout_ = register_module("src_dropout", ctx.make_dropout(config.dropout.embedding, DropoutSite::embedding));
  tgt_dropout_ = register_module("tgt_dropout", ctx.make_dropout(config.dropout.embedding, DropoutSite::embedding));
  for (std::int64_t i = 0; i < config.encoder_layers; ++i)
    encoder_.push_back(register_module(fmt::format("encoder.layers.{}", i),
                                       std::make_shared<EncoderLayer>(ctx, layers, *src_positional_)));
  for (std::int64_t i = 0; i < config.decoder_layers; ++i)
    decoder_.push_back(register_module(fmt::format("decoder.layers.{}", i),
                                       std::make_shared<DecoderLayer>(ctx, layers, *tgt_positional_)));
  if (config.norm_position == NormPosition::pre) {
    if (config.encoder_layers > 0) encoder_norm_ = register_module("encoder.norm", make_norm(ctx, config));
    decoder_norm_ = register_module("decoder.norm", make_norm(ctx, config));
  }
}

Tensor Transformer::embed(const Tensor& ids, PositionalEncoding& positional, std::int64_t offset) {
  ATTNLAB_CHECK(ids.rank() == 2, "transformer: token ids must be [batch, length], got {}", ids.shape().str());
  Tensor x = scale(attnlab::embedding(embedding_, ids), std::sqrt(static_cast<double>(config_.dims.d_model)));
  return positional.forward(x, offset);
}

Encoded Transformer::encode(const Tensor& src) {
  Encoded out;
  out.src_mask = padding_mask(src, config_.pad_id, dtype_);
  if (config_.expressions.any()) out.src_lengths = unpadded_lengths(src, config_.pad_id);
  const SentenceLengths lengths{out.src_lengths, {}};
  Tensor x = src_dropout_->forward(embed(src, *src_positional_, 0));
  if (!encoder_.empty() && encoder_.front()->fused_pre()) {
    // Each residual add and the norm after it in one pass; the last norm is the stack's.
    Tensor xn;
    for (std::size_t i = 0; i < encoder_.size(); ++i) {
      Norm& next = i + 1 < encoder_.size() ? encoder_[i + 1]->input_norm() : *encoder_norm_;
      DropoutAddNormPair o = encoder_[i]->forward_pre_fused(x, xn, out.src_mask, next, lengths);
      x = std::move(o.sum);
      xn = std::move(o.normed);
    }
    out.memory = xn;
    return out;
  }
  for (auto& layer : encoder_) x = layer->forward(x, out.src_mask, lengths);
  if (encoder_norm_) x = encoder_norm_->forward(x);
  out.memory = x;
  return out;
}

DecoderState Transformer::start_decoding() const {
  DecoderState state;
  state.layers.resize(decoder_.size());
  return state;
}

Tensor Transformer::decode(const Tensor& tgt_in, const Encoded& encoded, DecoderState* state) {
  const std::int64_t offset = state ? state->length : 0;
  // Score expressions' lengths: the target's unpadded ones, or while decoding the positions so far.
  SentenceLengths lengths{encoded.src_lengths, {}, offset};
  if (config_.expressions.any()) {
    lengths.tgt = state ? Tensor::full({tgt_in.dim(0)}, static_cast<double>(offset + tgt_in.dim(1)), DType::i32,
                                       tgt_in.device())
                        : unpadded_lengths(tgt_in, config_.pad_id);
    if (!lengths.src.defined()) lengths.src = key_lengths_of_mask(encoded.src_mask).to(encoded.src_mask.device());
  }
  Tensor y = tgt_dropout_->forward(embed(tgt_in, *tgt_positional_, offset));
  if (decoder_.front()->fused_pre()) {
    Tensor yn;
    for (std::size_t i = 0; i < decoder_.size(); ++i) {
      Norm& next = i + 1 < decoder_.size() ? decoder_[i + 1]->input_norm() : *decoder_norm_;
      DropoutAddNormPair o = decoder_[i]->forward_pre_fused(y, yn, encoded.memory, encoded.src_mask,
                                                            state ? &state->layers[i] : nullptr, next, lengths);
      y = std::move(o.sum);
      yn = std::move(o.normed);
    }
    y = yn;
  } else {
    for (std::size_t i = 0; i < decoder_.size(); ++i)
      y = decoder_[i]->forward(y, encoded.memory, encoded.src_mask, state ? &state->layers[i] : nullptr, lengths);
    if (decoder_norm_) y = decoder_norm_->forward(y);
  }
  if (state) state->length += tgt_in.dim(1);
  return y;
}

Tensor Transformer::project(const Tensor& hidden, bool bf16_logits) const {
  Shape out_shape = hidden.shape();
  out_shape[-1] = config_.vocab_size;
  Tensor flat = hidden.reshape({-1, config_.dims.d_model});
  return matmul(flat, embedding_, false, true, bf16_logits).reshape(out_shape);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt_in, bool bf16_logits) {
  return project(decode(tgt_in, encode(src)), bf16_logits);
}

}  // namespace attnlab::nmt
