// ffn "swiglu": the gated feed-forward network of Shazeer (2020), "GLU Variants Improve
// Transformer":
//   FFN_SwiGLU(x) = (silu(x W) * (x V)) W2,   W, V: d_model -> d_ff,   W2: d_ff -> d_model,
// with dropout on the hidden product at the context's ffn rate. The paper drops the biases;
// option `bias` brings them back. (Not a PositionWiseFfn: the gate needs a second projection.)
#include "attnlab/nn/linear.h"
#include "attnlab/ops/activation.h"
#include "attnlab/ops/binary.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class SwiGluFfn final : public FeedForward {
 public:
  explicit SwiGluFfn(const BuildContext& ctx) : d_model_(ctx.dims.d_model) {
    ATTNLAB_CHECK(ctx.init != nullptr, "ffn swiglu: the build context has no init generator");
    ATTNLAB_CHECK(ctx.dims.d_ff > 0, "ffn swiglu: d_ff must be positive, got {}", ctx.dims.d_ff);
    const bool bias = ctx.options.get_bool("bias");
    const std::int64_t d_ff = ctx.dims.d_ff;
    w_ = register_module("w", std::make_shared<nn::Linear>(d_model_, d_ff, bias, *ctx.init, ctx.dtype, ctx.device));
    v_ = register_module("v", std::make_shared<nn::Linear>(d_model_, d_ff, bias, *ctx.init, ctx.dtype, ctx.device));
    w2_ = register_module("w2", std::make_shared<nn::Linear>(d_ff, d_model_, bias, *ctx.init, ctx.dtype, ctx.device));
    dropout_ = register_module("dropout", ctx.make_dropout(ctx.dropout.ffn, DropoutSite::ffn));
  }

  Tensor forward(const Tensor& x) override {
    ATTNLAB_CHECK(x.rank() >= 1 && x.dim(-1) == d_model_, "ffn swiglu: input must be [..., d_model={}], got {}",
                  d_model_, x.shape().str());
    Tensor hidden = mul(silu(w_->forward(x)), v_->forward(x));  // [..., d_ff]
    return w2_->forward(dropout_->forward(hidden));
  }

 private:
  std::int64_t d_model_;
  std::shared_ptr<nn::Linear> w_, v_, w2_;
  std::shared_ptr<Dropout> dropout_;
};

void register_plugins(Registry& registry) {
  registry.add_ffn({.name = "swiglu",
                    .version = "1.0.0",
                    .description = "(silu(x W) * x V) W2 (Shazeer 2020, GLU variants)",
                    .options = {{"bias", OptionType::boolean, OptionValue(false),
                                 "learn biases in the W, V and W2 projections"}}},
                   [](const BuildContext& ctx) { return std::make_shared<SwiGluFfn>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("swiglu", "1.0.0", "gated feed-forward network with SiLU (SwiGLU)", register_plugins)
