// attention "cudnn": the paper's multi-head attention with the same four projections, parameter
// names and initialisation order as scaled_dot (checkpoints are interchangeable), and the core
// softmax(Q K^T / sqrt(d_k) + masks) V computed by cuDNN's fused flash attention, forward and
// backward (sdpa_node.cpp; the graphs in sdpa_graph.cpp, the cuDNN calls in cudnn_backend.cpp).
// Built only in CUDA builds that found cuDNN 9.
#include <memory>

#include "attnlab/nn/linear.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"
#include "sdpa_node.h"

namespace {

using namespace attnlab;
using namespace attnlab::cudnn_attention;

constexpr std::string_view kCudaOnly = "cudnn attention runs on CUDA devices only; use scaled_dot or flash";

// What it serves, declared at registration: CUDA only; bf16, and f32 tensors converted to bf16
// around each call (so f32 models compute their attention in bf16); head sizes multiples of 8 up
// to 128; padding masks (as per-batch key lengths: a suffix of each row), causal masking (Tq < Tk
// takes the bottom-right diagonal: cuDNN 9.6 or lengths that are multiples of 64, else a clear
// error at the call; not together with a padding mask, refused at the call), one query step
// against the KV cache; no attention dropout.
AttentionCapabilities cudnn_capabilities() {
  AttentionDeviceSupport cuda{.device = DeviceKind::cuda, .dtypes = {DType::bf16, DType::f32}};
  for (std::int64_t d = 8; d <= 128; d += 8) cuda.head_dims.push_back(d);
  cuda.padding_mask = true;
  cuda.causal = true;
  cuda.causal_longer_padded_keys = false;  // refused at the call (check_causal_padding)
  cuda.incremental = true;
  cuda.attention_dropout = false;
  cuda.compute_dtype = DType::bf16;
  AttentionCapabilities caps;
  caps.devices = {cuda};
  return caps;
}

class CudnnAttention final : public ProjectedAttention {
 public:
  explicit CudnnAttention(const BuildContext& ctx) : ProjectedAttention("cudnn", ctx, [&] { check_context(ctx); }) {}

  Tensor forward(const AttentionInputs& in) override {
    check_attention_input("cudnn", "query", in.query, d_model_);
    require_cuda(in.query);
    // The query projection [B, Tq, h * d_k] goes to cuDNN as it is (bshd), and so does the output.
    Tensor q = w_q_->forward(in.query);
    auto [k, v] = projected_keys_values(in);  // [B, h, Tk, d_k], [B, h, Tk, d_v]
    Tensor o = fused_attention(session(q.device()), {.q = q,
                                                     .k = k,
                                                     .v = v,
                                                     .heads = h_,
                                                     .q_layout = HeadLayout::bshd,
                                                     .key_padding_mask = in.key_padding_mask,
                                                     .causal = in.causal});  // [B, Tq, h * d_v]
    return w_o_->forward(o);
  }

  Tensor attend(const AttentionCore& c) override {
    check_attention_core("cudnn", c);
    require_cuda(c.query);
    return fused_attention(session(c.query.device()), {.q = c.query,
                                                       .k = c.key,
                                                       .v = c.value,
                                                       .heads = c.query.dim(1),
                                                       .q_layout = HeadLayout::bhsd,
                                                       .key_padding_mask = c.key_padding_mask,
                                                       .causal = c.causal});
  }

 private:
  // What cuDNN's fused attention serves, checked before any weight is allocated.
  static void check_context(const BuildContext& ctx) {
    const std::int64_t d_k = ctx.dims.d_k, d_v = ctx.dims.d_v;
    for (std::int64_t d : {d_k, d_v})
      ATTNLAB_CHECK(d % 8 == 0 && d <= 128,
                    "attention cudnn: head size {} (d_k {}, d_v {}) is not supported: cuDNN's fused attention takes "
                    "multiples of 8 up to 128; use scaled_dot or flash for this model",
                    d, d_k, d_v);
    ATTNLAB_CHECK(ctx.dropout.attention == 0.0,
                  "attention cudnn: attention dropout {} is not supported: cuDNN's fused attention draws its dropout "
                  "mask from its own generator, which the core's RNG and the experiment's dropout plugin cannot drive; "
                  "set the attention dropout to 0 or use scaled_dot or flash",
                  ctx.dropout.attention);
  }
  static void require_cuda(const Tensor& x) {
    ATTNLAB_CHECK(x.device().is_cuda(), "attention cudnn: {} (got {})", kCudaOnly, x.str());
  }
  // The device's cuDNN session, shared with the other modules on it.
  const std::shared_ptr<CudnnSdpa>& session(Device device) {
    if (!session_ || session_device_ != device.index) {
      session_ = CudnnSdpa::for_device(device.index);
      session_device_ = device.index;
    }
    return session_;
  }

  std::shared_ptr<CudnnSdpa> session_;
  int session_device_ = -1;
};

void register_plugins(Registry& registry) {
  registry.add_attention(
      {.name = "cudnn",
       .version = "1.0.0",
       .description = "multi-head scaled dot-product attention through cuDNN's fused flash attention (CUDA; "
                      "computes in bf16, f32 tensors are converted; same parameters as scaled_dot)",
       .options = {{"bias", OptionType::boolean, OptionValue(true),
                    "learn biases in the Q, K, V and output projections"}},
       .capabilities = cudnn_capabilities()},
      [](const BuildContext& ctx) { return std::make_shared<CudnnAttention>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("cudnn", "1.0.0", "multi-head attention through cuDNN's fused attention", register_plugins)
