// dropout "drophead": DropHead (Zhou et al. 2020). At the attention-weights site, [B, h, Tq, Tk],
// whole heads are dropped: each head of each sequence is kept with probability 1 - rate, and the
// kept heads of a sequence are scaled by h / (heads kept), the paper's rescaling, so that the sum
// over heads keeps its magnitude (a sequence that loses every head gets a zero attention output).
// A dropped head's weights are all zero, and so is its output. At every other site it is the
// standard element-wise inverted dropout.
#include "../common/group_mask.h"
#include "../common/site_dropout.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class DropHead final : public dropout_common::SiteDropout {
 public:
  explicit DropHead(const BuildContext& ctx) : SiteDropout("drophead", ctx, DropoutSite::attention) {}

 private:
  Tensor drop_at_site(const Tensor& x, Generator& rng) override {
    ATTNLAB_CHECK(x.rank() == 4, "dropout drophead: attention weights must be [batch, heads, Tq, Tk], got {}",
                  x.shape().str());
    const std::int64_t b = x.dim(0), h = x.dim(1);
    const std::vector<double> u = dropout_common::draw_uniforms(rng, b * h);
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
