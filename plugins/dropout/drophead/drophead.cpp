// dropout "drophead": DropHead (Zhou et al. 2020). At the attention-weights site, [B, h, Tq, Tk],
// whole heads are dropped: each head of each sequence is kept with probability 1 - rate, and the
// kept heads of a sequence are scaled by h / (heads kept), the paper's rescaling, so that the sum
// over heads keeps its magnitude (a sequence that loses every head gets a zero attention output).
// A dropped head's weights are all zero, and so is its output. At every other site it is the
// standard element-wise inverted dropout.
#include "../common/group_mask.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class DropHead final : public Dropout {
 public:
  explicit DropHead(const BuildContext& ctx)
      : rate_(ctx.options.get_real("rate")), site_(ctx.dropout_site), rng_(ctx.dropout_rng) {
    ATTNLAB_CHECK(rate_ >= 0.0 && rate_ < 1.0, "dropout drophead: rate must be in [0, 1), got {}", rate_);
  }

  Tensor forward(const Tensor& x) override {
    if (!training() || rate_ == 0.0) return x;
    ATTNLAB_CHECK(rng_ != nullptr, "dropout drophead: training with rate {} needs the context's dropout_rng", rate_);
    if (site_ != DropoutSite::attention) return dropout(x, rate_, *rng_);
    ATTNLAB_CHECK(x.rank() == 4, "dropout drophead: attention weights must be [batch, heads, Tq, Tk], got {}",
                  x.shape().str());
    const std::int64_t b = x.dim(0), h = x.dim(1);
    const std::vector<double> u = dropout_common::draw_uniforms(*rng_, b * h);
    std::vector<double> factors(u.size(), 0.0);
    for (std::int64_t s = 0; s < b; ++s) {
      std::int64_t kept = 0;
      for (std::int64_t n = 0; n < h; ++n) kept += u[static_cast<std::size_t>(s * h + n)] >= rate_;
      for (std::int64_t n = 0; n < h; ++n) {
        const auto at = static_cast<std::size_t>(s * h + n);
        if (u[at] >= rate_) factors[at] = static_cast<double>(h) / static_cast<double>(kept);
      }
    }
    return dropout_common::scale_groups(x, factors);
  }
  double rate() const override { return rate_; }

 private:
  double rate_;
  DropoutSite site_;
  Generator* rng_;
};

void register_plugins(Registry& registry) {
  registry.add_dropout({.name = "drophead", .version = "1.0.0",
                        .description = "DropHead: drops whole attention heads at the attention-weights site "
                                       "(Zhou et al. 2020); standard dropout elsewhere",
                        .options = {{"rate", OptionType::real, OptionValue(0.1), "drop probability (set per site)"}}},
                       [](const BuildContext& ctx) { return std::make_shared<DropHead>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("drophead", "1.0.0", "DropHead: whole-head dropout", register_plugins)
