// dropout "standard": inverted dropout (Srivastava et al. 2014) with the core's Philox stream:
// in training each element is kept with probability 1 - rate and scaled by 1 / (1 - rate).
#include "attnlab/ops/dropout.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class StandardDropout final : public Dropout {
 public:
  explicit StandardDropout(const BuildContext& ctx)
      : rate_(ctx.options.get_real("rate")), rng_(ctx.dropout_rng) {
    ATTNLAB_CHECK(rate_ >= 0.0 && rate_ < 1.0, "dropout standard: rate must be in [0, 1), got {}", rate_);
  }
  Tensor forward(const Tensor& x) override {
    if (!training() || rate_ == 0.0) return x;
    ATTNLAB_CHECK(rng_ != nullptr, "dropout standard: training with rate {} needs the context's dropout_rng",
                  rate_);
    return dropout(x, rate_, *rng_);
  }
  double rate() const override { return rate_; }

 private:
  double rate_;
  Generator* rng_;
};

void register_plugins(Registry& registry) {
  registry.add_dropout({.name = "standard", .version = "1.0.0",
                        .description = "inverted dropout with the core's counter-based RNG",
                        .options = {{"rate", OptionType::real, OptionValue(0.1), "drop probability"}}},
                       [](const BuildContext& ctx) { return std::make_shared<StandardDropout>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("standard", "1.0.0", "inverted dropout", register_plugins)
