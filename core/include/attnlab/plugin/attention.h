#pragma once
// The attention family: maps queries, keys and values to one output per query.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/module.h"
#include "attnlab/plugin/attention_positions.h"

namespace attnlab::expr {
struct ScoreExprCall;
}

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
  // Self-attention only: the positional scheme's part in this layer (attention_positions.h),
  // applied by plugins that declare its hooks; null when positions are only in the embeddings.
  // The helpers of attention_util.h apply it at the offsets of the cache.
  const AttentionPositions* positions = nullptr;
  // Each batch row's unpadded query and key lengths, i32 [B] on any device: q_len and kv_len of
  // score expressions (attnlab/expr/score_expr.h). Undefined: the key lengths follow from
  // key_padding_mask (Tk without one), the query lengths are the positions so far (Tk - Tq + Tq).
  Tensor query_lengths{};
  Tensor key_lengths{};
  // Score expressions' q_idx of the call's first query. -1: Tk - Tq, the queries being the last
  // positions of the keys' sequence (self-attention, with or without a cache); cross-attention
  // gives the queries' own positions (0, or the step being decoded).
  std::int64_t query_offset = -1;
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
  // Positions inside self-attention (attention_positions.h), keys at 0 .. Tk - 1 and queries at
  // Tk - Tq ..: rotation of q and k, score and value terms, as forward() applies them. Null: none.
  // Plugins whose attend() does not apply them refuse them (check_attention_core).
  const AttentionPositions* positions = nullptr;
  // Score expressions with their tensors, positions and lengths (attnlab/expr/score_call.h),
  // applied to the scores after the position terms; null: none. Plugins that do not apply them
  // refuse them (check_attention_core).
  const expr::ScoreExprCall* expressions = nullptr;
};

// What an attention plugin serves on one kind of device. A plugin declares these when it registers
// (PluginInfo::capabilities), so that an experiment or suite row it cannot serve is refused when it
// is checked (attnlab check, attnlab train), not when the first batch reaches the plugin.
struct AttentionDeviceSupport {
  DeviceKind device = DeviceKind::cpu;
  std::vector<DType> dtypes{DType::f32, DType::f64};
  // Supported per-head sizes, for d_k and d_v alike; empty means any.
  std::vector<std::int64_t> head_dims;
  bool padding_mask = true;       // AttentionInputs::key_padding_mask
  bool causal = true;             // AttentionInputs::causal
  // Causal queries over a longer key sequence (Tq < Tk, more than one query: query i sees keys
  // j <= i + Tk - Tq) in the same call as a key padding mask. The Transformer never makes such a
  // call (its decoder self-attention has Tq == Tk, or one query against its cache); cudnn cannot
  // serve it and refuses it at the call.
  bool causal_longer_padded_keys = true;
  bool incremental = true;        // AttentionInputs::cache (one query step against the KV cache)
  bool attention_dropout = true;  // BuildContext::dropout.attention > 0
  // The dtype the plugin computes in whatever its tensors' dtype, when that is coarser (cudnn:
  // bf16, also for f32 tensors); unset: the tensors' own. The conformance kit then compares with
  // that dtype's tolerance, and `attnlab plugins` prints it.
  std::optional<DType> compute_dtype;
  // The position hooks applied when AttentionInputs::positions is set; none by default, so that a
  // plugin written before positions existed is refused for such schemes instead of ignoring them.
  PositionHooks positions{};
  // Score expressions (BuildContext::score_expr): score_mod and mask_mod with their tensors,
  // learned ones among the layer's parameters. Off by default, for the same reason.
  bool score_expressions = false;
  // For `attnlab plugins`: which kernels serve which problems on visible device `index` of this
  // kind, as one line (flash on a GPU: tensor cores or FMA kernels, by the device's compute
  // capability and shared memory). Called only for devices that exist; unset: nothing to add.
  std::function<std::string(int index)> kernels;
};

// One entry per device kind the plugin runs on; a kind without an entry is not served. The
// default is what a plugin composed from core ops serves: f32 and f64, any head size, every
// feature, on the CPU and on CUDA.
struct AttentionCapabilities {
  std::vector<AttentionDeviceSupport> devices = everywhere();
  static std::vector<AttentionDeviceSupport> everywhere() {
    AttentionDeviceSupport cpu, cuda;
    cuda.device = DeviceKind::cuda;
    return {cpu, cuda};
  }
  // The entry for `kind`, or null when the plugin does not run there.
  const AttentionDeviceSupport* on(DeviceKind kind) const {
    for (const auto& d : devices)
      if (d.device == kind) return &d;
    return nullptr;
  }
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
};

}  // namespace attnlab
