// positional "none": no position information at all (an ablation: attention alone is
// permutation-equivariant, so the encoder sees a bag of tokens).
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class NoPositions final : public PositionalEncoding {
 public:
  explicit NoPositions(const BuildContext& ctx) : d_model_(ctx.dims.d_model) {}
  Tensor forward(const Tensor& x, std::int64_t) override {
    ATTNLAB_CHECK(x.rank() == 3 && x.dim(2) == d_model_,
                  "positional none: input must be [batch, length, d_model={}], got {}", d_model_,
                  x.shape().str());
    return x;
  }

 private:
  std::int64_t d_model_;
};

void register_plugins(Registry& registry) {
  registry.add_positional({.name = "none", .version = "1.0.0",
                           .description = "no positional information (ablation)", .options = {}},
                          [](const BuildContext& ctx) { return std::make_shared<NoPositions>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("none", "1.0.0", "no positional information", register_plugins)
