#include "attnlab/nmt/model/transformer.h"

#include <cmath>
#include <limits>

#include "attnlab/init.h"
#include "attnlab/ops.h"

namespace attnlab::nmt {
namespace {

BuildContext plugin_context(BuildContext ctx, const Registry& registry, PluginFamily family,
                            const PluginChoice& choice) {
  ctx.options = Options::with_defaults(registry.find(family, choice.name).options, choice.options);
  return ctx;
}

std::shared_ptr<Attention> make_attention(const BuildContext& ctx, const TransformerConfig& config) {
  return ctx.registry->make_attention(
      config.attention.name, plugin_context(ctx, *ctx.registry, PluginFamily::attention, config.attention));
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
// built-in "standard" dropout plugin and a centred norm (layer_norm) only, and post-norm blocks.
Generator* fused_stream(const BuildContext& ctx, const TransformerConfig& config, const Norm& norm) {
  const auto fusable = norm.fusable();
  const bool fused = config.fused_kernels && config.dropout_plugin.name == "standard" &&
                     config.norm_position == "post" && fusable && fusable->centered;
  return fused ? ctx.dropout_rng : nullptr;
}

// Post-norm: Norm(residual + Dropout(branch)). Fused, it draws from the stream exactly when and as
// much as the standard plugin's forward does (in training at a rate > 0: dropout(branch, rate,
// stream)), so the masks, and with them the whole run, are those of the unfused path.
Tensor add_norm(Norm& norm, Dropout& drop, const Tensor& residual, const Tensor& branch, Generator* fused_rng) {
  if (!fused_rng) return norm.forward(add(residual, drop.forward(branch)));
  const FusableNorm f = *norm.fusable();
  const DropoutAddLayerNormInputs in{.x = branch, .bias = Tensor(), .residual = residual, .gamma = f.gamma, .beta = f.beta};
  if (drop.training() && drop.rate() > 0.0) return dropout_add_layer_norm(in, drop.rate(), *fused_rng, f.eps);
  return dropout_add_layer_norm(in, 0.0, 0, 0, f.eps);
}

// One residual block around `sublayer`: post-norm Norm(x + Dropout(sublayer(x))) or pre-norm
// x + Dropout(sublayer(Norm(x))).
template <typename F>
Tensor residual_block(bool pre_norm, Norm& norm, Dropout& drop, const Tensor& x, Generator* fused_rng, F&& sublayer) {
  if (pre_norm) return add(x, drop.forward(sublayer(norm.forward(x))));
  return add_norm(norm, drop, x, sublayer(x), fused_rng);
}

}  // namespace

Tensor padding_mask(const Tensor& ids, std::int64_t pad_id, DType dtype) {
  ATTNLAB_CHECK(ids.rank() == 2, "padding_mask: ids must be [batch, length], got {}", ids.shape().str());
  const auto values = ids.to_vector<std::int64_t>();
  std::vector<double> mask(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    mask[i] = values[i] == pad_id ? -std::numeric_limits<double>::infinity() : 0.0;
  return Tensor::from_vector<double>(ids.shape(), mask).to(dtype).to(ids.device());
}

EncoderLayer::EncoderLayer(const BuildContext& ctx, const TransformerConfig& config,
                           const PositionalEncoding& positional) {
  self_attn_ = register_module("self_attn", make_attention(ctx, config));
  if (auto p = positional.attention_positions(ctx)) positions_ = register_module("self_attn_positions", p);
  drop1_ = register_module("dropout1", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm1_ = register_module("norm1", make_norm(ctx, config));
  ffn_ = register_module("ffn", make_ffn(ctx, config));
  drop2_ = register_module("dropout2", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm2_ = register_module("norm2", make_norm(ctx, config));
  pre_norm_ = config.norm_position == "pre";
  fused_rng_ = fused_stream(ctx, config, *norm1_);
}

Tensor EncoderLayer::forward(const Tensor& x, const Tensor& src_mask) {
  Tensor h = residual_block(pre_norm_, *norm1_, *drop1_, x, fused_rng_, [&](const Tensor& in) {
    return self_attn_->forward(
        {.query = in, .key = in, .value = in, .key_padding_mask = src_mask, .positions = positions_.get()});
  });
  return residual_block(pre_norm_, *norm2_, *drop2_, h, fused_rng_, [&](const Tensor& in) { return ffn_->forward(in); });
}

DecoderLayer::DecoderLayer(const BuildContext& ctx, const TransformerConfig& config,
                           const PositionalEncoding& positional) {
  self_attn_ = register_module("self_attn", make_attention(ctx, config));
  if (auto p = positional.attention_positions(ctx)) positions_ = register_module("self_attn_positions", p);
  drop1_ = register_module("dropout1", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm1_ = register_module("norm1", make_norm(ctx, config));
  cross_attn_ = register_module("cross_attn", make_attention(ctx, config));
  drop2_ = register_module("dropout2", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm2_ = register_module("norm2", make_norm(ctx, config));
  ffn_ = register_module("ffn", make_ffn(ctx, config));
  drop3_ = register_module("dropout3", ctx.make_dropout(config.dropout.residual, DropoutSite::residual));
  norm3_ = register_module("norm3", make_norm(ctx, config));
  pre_norm_ = config.norm_position == "pre";
  fused_rng_ = fused_stream(ctx, config, *norm1_);
}

Tensor DecoderLayer::forward(const Tensor& y, const Tensor& memory, const Tensor& src_mask,
                             DecoderLayerState* state) {
  Tensor h = residual_block(pre_norm_, *norm1_, *drop1_, y, fused_rng_, [&](const Tensor& in) {
    return self_attn_->forward({.query = in,
                                .key = in,
                                .value = in,
                                .causal = true,
                                .cache = state ? &state->self_attn : nullptr,
                                .positions = positions_.get()});
  });
  if (state) state->cross_attn.static_kv = true;
  Tensor g = residual_block(pre_norm_, *norm2_, *drop2_, h, fused_rng_, [&](const Tensor& in) {
    return cross_attn_->forward({.query = in,
                                 .key = memory,
                                 .value = memory,
                                 .key_padding_mask = src_mask,
                                 .cache = state ? &state->cross_attn : nullptr});
  });
  return residual_block(pre_norm_, *norm3_, *drop3_, g, fused_rng_, [&](const Tensor& in) { return ffn_->forward(in); });
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
  ATTNLAB_CHECK(config.norm_position == "post" || config.norm_position == "pre",
                "transformer: norm_position must be \"post\" or \"pre\", got \"{}\"", config.norm_position);
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
  if (config.norm_position == "pre") {
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
  Tensor x = src_dropout_->forward(embed(src, *src_positional_, 0));
  for (auto& layer : encoder_) x = layer->forward(x, out.src_mask);
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
  Tensor y = tgt_dropout_->forward(embed(tgt_in, *tgt_positional_, offset));
  for (std::size_t i = 0; i < decoder_.size(); ++i)
    y = decoder_[i]->forward(y, encoded.memory, encoded.src_mask, state ? &state->layers[i] : nullptr);
  if (decoder_norm_) y = decoder_norm_->forward(y);
  if (state) state->length += tgt_in.dim(1);
  return y;
}

Tensor Transformer::project(const Tensor& hidden) const {
  Shape out_shape = hidden.shape();
  out_shape[-1] = config_.vocab_size;
  Tensor flat = hidden.reshape({-1, config_.dims.d_model});
  return matmul(flat, embedding_, false, true).reshape(out_shape);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt_in) {
  return project(decode(tgt_in, encode(src)));
}

}  // namespace attnlab::nmt
