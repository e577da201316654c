// attention "flash": the paper's multi-head scaled dot-product attention with the attention core
// (softmax(Q K^T / sqrt(d_k) + mask) V, dropout on the weights) fused into one op that never
// stores the [Tq, Tk] scores (flash_attention.h). The projections, their parameter names and
// their initialisation order are scaled_dot's, so checkpoints of the two are interchangeable and
// one seed gives both the same weights.
#include <cmath>

#include "attnlab/nn/linear.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"
#include "flash_attention.h"

namespace {

using namespace attnlab;

class FlashAttention final : public Attention {
 public:
  explicit FlashAttention(const BuildContext& ctx)
      : d_model_(ctx.dims.d_model), h_(ctx.dims.n_heads), d_k_(ctx.dims.d_k), d_v_(ctx.dims.d_v),
        rate_(ctx.dropout.attention), rng_(ctx.dropout_rng) {
    ATTNLAB_CHECK(ctx.init != nullptr, "attention flash: the build context has no init generator");
    ATTNLAB_CHECK(h_ > 0 && d_k_ > 0 && d_v_ > 0, "attention flash: h, d_k and d_v must be positive");
    if (ctx.device.is_cuda()) {
      const std::string problem = flash::cuda_head_dims_problem(d_k_, d_v_);
      ATTNLAB_CHECK(problem.empty(), "{}", problem);
    }
    // The weights' dropout is fused into the kernels: it is the standard plugin's inverted dropout.
    ATTNLAB_CHECK(rate_ == 0.0 || ctx.dropout_plugin == "standard",
                  "attention flash: attention dropout {} is fused into the kernels as the 'standard' dropout, so "
                  "dropout plugin '{}' cannot apply there; set model.attention_dropout = 0 or use "
                  "fallback = \"scaled_dot\" in [model.attention]",
                  rate_, ctx.dropout_plugin);
    const bool bias = ctx.options.get_bool("bias");
    w_q_ = register_module("w_q", std::make_shared<nn::Linear>(d_model_, h_ * d_k_, bias, *ctx.init, ctx.dtype, ctx.device));
    w_k_ = register_module("w_k", std::make_shared<nn::Linear>(d_model_, h_ * d_k_, bias, *ctx.init, ctx.dtype, ctx.device));
    w_v_ = register_module("w_v", std::make_shared<nn::Linear>(d_model_, h_ * d_v_, bias, *ctx.init, ctx.dtype, ctx.device));
    w_o_ = register_module("w_o", std::make_shared<nn::Linear>(h_ * d_v_, d_model_, bias, *ctx.init, ctx.dtype, ctx.device));
  }

  Tensor forward(const AttentionInputs& in) override {
    check_attention_input("flash", "query", in.query, d_model_);
    const std::int64_t b = in.query.dim(0);
    Tensor q = split_heads(w_q_->forward(in.query), h_);  // [B, h, Tq, d_k]
    auto [k, v] = attention_keys_values(  // [B, h, Tk, d_k], [B, h, Tk, d_v]
        "flash", in, d_model_, [&](const Tensor& x) { return split_heads(w_k_->forward(x), h_); },
        [&](const Tensor& x) { return split_heads(w_v_->forward(x), h_); });
    attention_padding_mask("flash", in, b, k.dim(2));  // checks the mask is [B, Tk]
    flash::FlashOptions o;
    o.key_padding_mask = in.key_padding_mask;
    o.causal = in.causal;
    o.scale = 1.0 / std::sqrt(static_cast<double>(d_k_));
    if (training() && rate_ > 0.0) {
      ATTNLAB_CHECK(rng_ != nullptr, "attention flash: training with attention dropout {} needs the context's "
                                     "dropout_rng", rate_);
      // The draw the standard dropout plugin makes for the [B, h, Tq, Tk] weights of scaled_dot:
      // the same generator position, the same element numbering, the same mask.
      const Generator::Draw draw = rng_->reserve(static_cast<std::uint64_t>(b * h_ * q.dim(2) * k.dim(2)));
      o.dropout = rate_;
      o.seed = draw.seed;
      o.offset = draw.offset;
    }
    return w_o_->forward(merge_heads(flash::flash_attention(q, k, v, o)));  // [B, h, Tq, d_v] -> [B, Tq, d]
  }

  // The fused core alone (no projections, no dropout), for benchmarks and core comparisons.
  Tensor attend(const AttentionCore& c) override {
    check_attention_core("flash", c);
    flash::FlashOptions o;
    o.key_padding_mask = c.key_padding_mask;
    o.causal = c.causal;
    o.scale = 1.0 / std::sqrt(static_cast<double>(c.query.dim(3)));
    return flash::flash_attention(c.query, c.key, c.value, o);
  }

 private:
  std::int64_t d_model_, h_, d_k_, d_v_;
  double rate_;
  Generator* rng_;
  std::shared_ptr<nn::Linear> w_q_, w_k_, w_v_, w_o_;
};

AttentionCapabilities capabilities() {
  AttentionCapabilities caps;
  caps.devices = {
      {.device = DeviceKind::cpu, .dtypes = {DType::f32, DType::f64}},
      {.device = DeviceKind::cuda,
       .dtypes = {DType::f32, DType::bf16},
       .head_dims = {flash::kCudaHeadDims.begin(), flash::kCudaHeadDims.end()}},
  };
  return caps;
}

void register_plugins(Registry& registry) {
  registry.add_attention(
      {.name = "flash",
       .version = "1.0.0",
       .description = "multi-head scaled dot-product attention as one fused, tiled kernel with an online softmax "
                      "(FlashAttention-2 style; same parameters as scaled_dot)",
       .options = {{"bias", OptionType::boolean, OptionValue(true),
                    "learn biases in the Q, K, V and output projections"}},
       .capabilities = capabilities()},
      [](const BuildContext& ctx) { return std::make_shared<FlashAttention>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("flash", "1.0.0", "fused tiled attention (online softmax, CPU and CUDA kernels)", register_plugins)
