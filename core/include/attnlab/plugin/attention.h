#pragma once
// The attention family: maps queries, keys and values to one output per query.
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/module.h"

namespace attnlab {

// Past keys and values of one attention layer during incremental decoding, after projection.
// Self-attention appends one step per call; cross-attention (static_kv) computes the encoder's
// keys and values once and reuses them.
struct KVCache {
  Tensor keys;    // [B, h, T_past, d_k], undefined before the first step
  Tensor values;  // [B, h, T_past, d_v]
  bool static_kv = false;
  std::int64_t length() const { return keys.defined() ? keys.dim(2) : 0; }
  // Keeps batch rows `rows` (in that order), e.g. the surviving hypotheses of beam search.
  void reorder(const std::vector<std::int64_t>& rows);
};

struct AttentionInputs {
  Tensor query{};  // [B, Tq, d_model]
  Tensor key{};    // [B, Tk, d_model]
  Tensor value{};  // [B, Tk, d_model]
  // Additive key padding mask [B, Tk] of the compute dtype: 0 for real keys, -inf for padding.
  // Undefined: no padding.
  Tensor key_padding_mask{};
  // Query i may not see key j > i + (Tk - Tq) (decoder self-attention).
  bool causal = false;
  // Incremental decoding: when set, `key`/`value` hold only the new steps (self-attention) or
  // are ignored once the cache is filled (static_kv), and past projections come from the cache.
  KVCache* cache = nullptr;
};

// The attention core on projected heads: no projections, no dropout.
struct AttentionCore {
  Tensor query{};  // [B, h, Tq, d_k]
  Tensor key{};    // [B, h, Tk, d_k]
  Tensor value{};  // [B, h, Tk, d_v]
  // Additive key padding mask [B, Tk] (0 or -inf), as in AttentionInputs; undefined: none.
  Tensor key_padding_mask{};
  // Query i may not see key j > i + (Tk - Tq).
  bool causal = false;
};

// What an implementation supports, checked before training starts.
struct AttentionCapabilities {
  // Tensor dtypes it accepts (how it computes may differ: see notes).
  std::vector<DType> dtypes{DType::f32, DType::f64};
  std::vector<DeviceKind> devices{DeviceKind::cpu, DeviceKind::cuda};
  // Supported per-head sizes; empty means any.
  std::vector<std::int64_t> head_dims;
  bool padding_mask = true;
  bool causal = true;
  bool incremental = true;
  // Dropout on the attention weights (BuildContext::dropout.attention > 0).
  bool attention_dropout = true;
  // Anything else a user should know (e.g. the precision it computes in), one line.
  std::string notes;
};

class Attention : public Module {
 public:
  // Returns [B, Tq, d_model]. Throws an Error naming the shapes when they disagree with the
  // build context's dimensions. Differentiable w.r.t. the inputs and the parameters.
  virtual Tensor forward(const AttentionInputs& inputs) = 0;
  // The core alone, softmax(q k^T / sqrt(d_k) + masks) v -> [B, h, Tq, d_v], differentiable in
  // q, k and v; for benchmarks and for comparing the cores of two plugins. Same device and dtype
  // rules as forward(). A plugin need not expose it: the default throws an Error saying so.
  virtual Tensor attend(const AttentionCore& core);
  virtual AttentionCapabilities capabilities() const { return {}; }
};

}  // namespace attnlab
