// norm "layer_norm": LayerNorm(x) = (x - mean) / sqrt(var + eps) * weight + bias over d_model
// (Ba et al. 2016), the paper's norm; weight starts at 1, bias at 0, eps is the model's
// layer_norm_eps. Its parameters are named as the core's nn::LayerNorm names them, so checkpoints
// of models built before the norm family load unchanged.
#include "attnlab/ops/layer_norm.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

class LayerNormPlugin final : public attnlab::Norm {
 public:
  explicit LayerNormPlugin(const attnlab::BuildContext& ctx) : eps_(ctx.norm_eps) {
    const std::int64_t d = ctx.dims.d_model;
    gamma_ = register_parameter("weight", attnlab::Tensor::full({d}, 1.0, ctx.dtype, ctx.device));
    beta_ = register_parameter("bias", attnlab::Tensor::zeros({d}, ctx.dtype, ctx.device));
  }
  // x [..., d_model] -> the same shape
  attnlab::Tensor forward(const attnlab::Tensor& x) override { return attnlab::layer_norm(x, gamma_, beta_, eps_); }
  std::optional<attnlab::FusableNorm> fusable() const override {
    return attnlab::FusableNorm{gamma_, beta_, eps_, true};
  }

 private:
  double eps_;
  attnlab::Tensor gamma_, beta_;
};

void register_plugins(attnlab::Registry& registry) {
  registry.add_norm({.name = "layer_norm", .version = "1.0.0",
                     .description = "(x - mean) / sqrt(var + eps) * weight + bias (Ba et al. 2016)", .options = {}},
                    [](const attnlab::BuildContext& ctx) { return std::make_shared<LayerNormPlugin>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("layer_norm", "1.0.0", "layer normalization, the paper's norm", register_plugins)
