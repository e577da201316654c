#pragma once
// Whether an attention plugin can serve a model: the capabilities the plugin registered
// (PluginInfo::capabilities) against the device, compute dtype and head sizes of an experiment or
// suite row, so that `attnlab check` and `attnlab train` refuse a row before any training.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/plugin/registry.h"

namespace attnlab {

// What a model asks of its attention besides device, dtype and head sizes. The Transformer uses
// padding masks (encoder and cross-attention), causal masking (decoder self-attention) and the KV
// cache (translation); attention dropout only when its rate is above 0.
struct AttentionNeeds {
  bool padding_mask = true;
  bool causal = true;
  bool incremental = true;
  bool attention_dropout = false;
  // Causal queries over a longer padded key sequence (AttentionDeviceSupport's field of that
  // name): not asked by the Transformer, whose causal calls have no padding mask.
  bool causal_longer_padded_keys = false;
  // Score expressions in [model.attention] (score_mod, mask_mod).
  bool score_expressions = false;
  // The hooks of the positional plugin `positional` inside self-attention (its PluginInfo's).
  PositionHooks positions{};
  std::string positional;
};

// Empty when the attention plugin `info` serves the model; otherwise one line naming the plugin,
// what it does not support and what it supports on that device, e.g.
//   attention plugin 'flash' does not support head size d_k = 512 on cuda (it supports on cuda:
//   f32, bf16; head sizes 16, 32, 64, 128; padding mask, causal, incremental, attention dropout;
//   positions: rotation)
// or, for a positional scheme it does not apply,
//   attention plugin 'additive' does not support position rotation (positional plugin 'rope'
//   uses them) on cpu (it supports on cpu: ...)
// `dtype` is the compute dtype of the model (f32, or bf16 in mixed precision).
std::optional<std::string> check_attention_support(const PluginInfo& info, Device device, DType dtype,
                                                   std::int64_t d_k, std::int64_t d_v,
                                                   const AttentionNeeds& needs = {});

// What one device entry serves, as one line: "f32, f64; head sizes any; padding mask, causal, ...".
std::string describe_attention_support(const AttentionDeviceSupport& support);

}  // namespace attnlab
