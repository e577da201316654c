#pragma once
// The attention core through cuDNN's fused attention as an autograd op of the cudnn plugin.
#include <cstdint>
#include <memory>

#include "attnlab/tensor.h"
#include "cudnn_backend.h"
#include "sdpa_graph.h"

namespace attnlab::cudnn_attention {

struct CoreCall {
  // q: [B, h, Tq, d_k] (bhsd) or a projection's [B, Tq, h * d_k] output (bshd); k, v:
  // [B, h, Tk, d_k] and [B, h, Tk, d_v]. One CUDA device, one dtype: bf16, or f32 converted to
  // bf16 around the cuDNN calls.
  Tensor q, k, v;
  std::int64_t heads = 1;
  HeadLayout q_layout = HeadLayout::bhsd;
  Tensor key_padding_mask;  // [B, Tk] additive 0 / -inf (a suffix of each row), or undefined
  bool causal = false;      // query i sees keys j <= i + (Tk - Tq)
};

// softmax(q k^T / sqrt(d_k) + masks) v in q's dtype and layout: [B, h, Tq, d_v] or
// [B, Tq, h * d_v]. Records a node whose backward runs cuDNN's fused attention backward when q,
// k or v requires grad (the forward then also writes the softmax statistics). Throws an Error
// naming the plugin for other devices, dtypes, head sizes, masks or causal shapes.
Tensor fused_attention(const std::shared_ptr<CudnnSdpa>& session, const CoreCall& call);

}  // namespace attnlab::cudnn_attention
