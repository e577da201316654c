#pragma once
// The encoder-decoder Transformer of Vaswani et al. (2017), section 3:
//   * one embedding matrix E [V, d_model] shared by the source embedding, the target embedding
//     and the pre-softmax projection (logits = h E^T), embeddings scaled by sqrt(d_model);
//   * positional encodings (a plugin) added at the bottom of both stacks, then dropout; a scheme
//     that acts inside attention (rope, alibi, relative) adds its part to every self-attention
//     layer ("self_attn_positions", with that layer's parameters, if any);
//   * residual blocks, post-norm as the paper, Norm(x + Dropout(Sublayer(x))), pre-norm,
//     x + Dropout(Sublayer(Norm(x))) with one more norm at the top of each stack, or DeepNorm,
//     Norm(alpha x + Dropout(Sublayer(x))) with the value and output projections of attention
//     and the feed-forward matrices initialised times beta (config.norm_position; deepnorm_scales):
//       encoder layer: self-attention, feed-forward;
//       decoder layer: causal self-attention, attention over the encoder output, feed-forward.
//     With config.fused_kernels, the "standard" dropout plugin and a norm that the core's fused
//     kernel computes (layer_norm, rms_norm), the dropout, the residual add (and scale) and the
//     norm of a post-norm or DeepNorm block are one dropout_add_layer_norm call, and in a
//     pre-norm stack each residual add and the norm after it one dropout_add_norm_pair call, with
//     the same result.
// Attention, positional encoding, feed-forward network, dropout and norm come from plugins by name.
#include <memory>
#include <vector>

#include "attnlab/nmt/model/model_config.h"
#include "attnlab/ops/dropout_add_layer_norm.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::nmt {

// DeepNorm's constants (Wang et al. 2022, "DeepNet", for N encoder and M decoder layers):
// encoder alpha = 0.81 (N^4 M)^(1/16), beta = 0.87 (N^4 M)^(-1/16); decoder alpha = (3M)^(1/4),
// beta = (12M)^(-1/4); a decoder alone (N = 0): alpha = (2M)^(1/4), beta = (8M)^(-1/4).
struct DeepNormScales {
  double encoder_alpha = 1.0, encoder_beta = 1.0, decoder_alpha = 1.0, decoder_beta = 1.0;
};
DeepNormScales deepnorm_scales(std::int64_t encoder_layers, std::int64_t decoder_layers);

// How a layer's residual blocks are built, from config.norm_position: pre-norm or not, the
// residual scale (DeepNorm's alpha; 1 for the paper's post-norm) and the scale of the initial
// weights of the value and output projections and the feed-forward matrices (DeepNorm's beta; 1:
// the weights as drawn).
struct ResidualForm {
  bool pre_norm = false;
  double alpha = 1.0;
  double beta = 1.0;
};

// Each batch row's unpadded source and target lengths, i32 [B]: q_len and kv_len of score
// expressions (undefined where the model has none: nothing reads them); and the target position
// of the call's first query (the step being decoded), cross-attention's q_idx offset.
struct SentenceLengths {
  Tensor src, tgt;
  std::int64_t tgt_offset = 0;
};

class EncoderLayer : public Module {
 public:
  // `positional` builds the layer's part of a scheme that acts inside self-attention.
  EncoderLayer(const BuildContext& ctx, const TransformerConfig& config, const PositionalEncoding& positional);
  // x [B, S, d]; src_mask [B, S] additive (0 / -inf)
  Tensor forward(const Tensor& x, const Tensor& src_mask, const SentenceLengths& lengths = {});
  // Pre-norm with fused kernels (fused_pre()): xn is norm1(x) when the block before computed it
  // (else undefined), `next` the norm that reads this layer's output (the next layer's first norm
  // or the stack's final one). Returns the output (sum) and next(output) (normed), the output of
  // forward() and the next norm of it, each residual add and the following norm in one pass.
  DropoutAddNormPair forward_pre_fused(const Tensor& x, Tensor xn, const Tensor& src_mask, Norm& next,
                                       const SentenceLengths& lengths = {});
  bool fused_pre() const { return form_.pre_norm && fused_rng_ != nullptr; }
  Norm& input_norm() { return *norm1_; }

 private:
  // The self-attention sub-layer on its (normed) input, as both forward paths call it.
  Tensor attend(const Tensor& in, const Tensor& src_mask, const SentenceLengths& lengths);
  std::shared_ptr<Attention> self_attn_;
  std::shared_ptr<AttentionPositions> positions_;  // null when positions are only in the embeddings
  std::shared_ptr<FeedForward> ffn_;
  std::shared_ptr<Norm> norm1_, norm2_;
  std::shared_ptr<Dropout> drop1_, drop2_;
  ResidualForm form_;
  Generator* fused_rng_ = nullptr;  // the dropout stream when the blocks run fused, else null
};

// The per-layer caches of incremental decoding.
struct DecoderLayerState {
  KVCache self_attn;
  KVCache cross_attn;
};

class DecoderLayer : public Module {
 public:
  DecoderLayer(const BuildContext& ctx, const TransformerConfig& config, const PositionalEncoding& positional);
  // y [B, T, d]; memory [B, S, d]; state non-null for incremental decoding (y is then the new steps).
  Tensor forward(const Tensor& y, const Tensor& memory, const Tensor& src_mask, DecoderLayerState* state,
                 const SentenceLengths& lengths = {});
  // As EncoderLayer::forward_pre_fused.
  DropoutAddNormPair forward_pre_fused(const Tensor& y, Tensor yn, const Tensor& memory, const Tensor& src_mask,
                                       DecoderLayerState* state, Norm& next, const SentenceLengths& lengths = {});
  bool fused_pre() const { return form_.pre_norm && fused_rng_ != nullptr; }
  Norm& input_norm() { return *norm1_; }

 private:
  // The two attention sub-layers on their (normed) inputs, as both forward paths call them.
  Tensor attend_self(const Tensor& in, DecoderLayerState* state, const SentenceLengths& lengths);
  Tensor attend_cross(const Tensor& in, const Tensor& memory, const Tensor& src_mask, DecoderLayerState* state,
                      const SentenceLengths& lengths);
  std::shared_ptr<Attention> self_attn_, cross_attn_;
  std::shared_ptr<AttentionPositions> positions_;  // the self-attention's; null when none
  std::shared_ptr<FeedForward> ffn_;
  std::shared_ptr<Norm> norm1_, norm2_, norm3_;
  std::shared_ptr<Dropout> drop1_, drop2_, drop3_;
  ResidualForm form_;
  Generator* fused_rng_ = nullptr;  // the dropout stream when the blocks run fused, else null
};

// Everything incremental decoding carries from one step to the next.
struct DecoderState {
  std::vector<DecoderLayerState> layers;
  std::int64_t length = 0;  // target positions decoded so far
  // Keeps batch rows `rows` in that order (beam search).
  void reorder(const std::vector<std::int64_t>& rows);
};

struct Encoded {
  Tensor memory;    // [B, S, d_model]
  Tensor src_mask;  // [B, S] additive: 0 for tokens, -inf for padding
  Tensor src_lengths;  // [B] i32, the source's unpadded lengths; undefined without score expressions
};

class Transformer : public Module {
 public:
  // Builds every sub-module from `registry`; `init` draws the initial weights in a fixed order.
  // `dropout_rng` drives every dropout in training and must outlive the model. The attention
  // layers use config.attention, or its fallback where that cannot serve this device, dtype and
  // head sizes (resolve_attention).
  Transformer(const TransformerConfig& config, const Registry& registry, Generator& init,
              Generator& dropout_rng, DType dtype = DType::f32, Device device = Device::cpu());

  // Teacher forcing: src [B, S], tgt_in [B, T] ids (i64) -> logits [B, T, V]. bf16_logits: under
  // bf16 precision the logits in bf16 (matmul's bf16_out), for cross_entropy to read in training.
  Tensor forward(const Tensor& src, const Tensor& tgt_in, bool bf16_logits = false);
  Encoded encode(const Tensor& src);
  // Decoder hidden states [B, T, d] for tgt_in; with a state, tgt_in holds only the new steps.
  Tensor decode(const Tensor& tgt_in, const Encoded& encoded, DecoderState* state = nullptr);
  // h [..., d] -> logits [..., V] through the shared embedding (bf16_logits: as in forward).
  Tensor project(const Tensor& hidden, bool bf16_logits = false) const;
  DecoderState start_decoding() const;

  const TransformerConfig& config() const { return config_; }
  // Which attention plugin built the attention layers, and why when it is the fallback.
  const AttentionResolution& attention() const { return attention_; }
  const Tensor& embedding() const { return embedding_; }
  // The optimizer step being trained, for plugins that schedule by it (BuildContext::training_step);
  // the trainer sets it before each update.
  void set_training_step(std::int64_t step) { training_step_ = step; }
  std::int64_t training_step() const { return training_step_; }

 private:
  Tensor embed(const Tensor& ids, PositionalEncoding& positional, std::int64_t offset);

  TransformerConfig config_;
  AttentionResolution attention_;
  DType dtype_;
  Device device_;
  Tensor embedding_;  // [V, d_model]
  std::int64_t training_step_ = 0;
  std::shared_ptr<PositionalEncoding> src_positional_, tgt_positional_;
  std::shared_ptr<Dropout> src_dropout_, tgt_dropout_;
  std::vector<std::shared_ptr<EncoderLayer>> encoder_;
  std::vector<std::shared_ptr<DecoderLayer>> decoder_;
  // Pre-norm: the norms at the top of the encoder (null without encoder layers) and the decoder.
  std::shared_ptr<Norm> encoder_norm_, decoder_norm_;
};

// Additive padding mask [B, S] (0 for tokens, -inf where ids == pad) in dtype on ids' device.
Tensor padding_mask(const Tensor& ids, std::int64_t pad_id, DType dtype);

}  // namespace attnlab::nmt
