// norm "rms_norm": RMSNorm(x) = x / sqrt(mean(x^2) + eps) * weight over d_model (Zhang & Sennrich
// 2019): layer normalization without centring and without bias; weight starts at 1, eps is the
// model's layer_norm_eps.
#include "attnlab/ops/rms_norm.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

class RmsNormPlugin final : public attnlab::Norm {
 public:
  explicit RmsNormPlugin(const attnlab::BuildContext& ctx) : eps_(ctx.norm_eps) {
    gamma_ = register_parameter("weight", attnlab::Tensor::full({ctx.dims.d_model}, 1.0, ctx.dtype, ctx.device));
  }
  // x [..., d_model] -> the same shape
  attnlab::Tensor forward(const attnlab::Tensor& x) override {
    return attnlab::rms_norm(x, gamma_, attnlab::Tensor(), eps_);
  }
  std::optional<attnlab::FusableNorm> fusable() const override {
    return attnlab::FusableNorm{gamma_, attnlab::Tensor(), eps_, false};
  }

 private:
  double eps_;
  attnlab::Tensor gamma_;
};

void register_plugins(attnlab::Registry& registry) {
  registry.add_norm({.name = "rms_norm", .version = "1.0.0",
                     .description = "x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich 2019)", .options = {}},
                    [](const attnlab::BuildContext& ctx) { return std::make_shared<RmsNormPlugin>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("rms_norm", "1.0.0", "root-mean-square normalization", register_plugins)
