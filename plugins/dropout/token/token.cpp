// dropout "token": token (word) dropout at the embedding site (Gal and Ghahramani 2016; Sennrich,
// Haddow and Birch 2016): the whole vector of a token position, [B, T, d_model] -> one decision
// per (sequence, position), is kept with probability 1 - rate and scaled by 1 / (1 - rate); a
// dropped token contributes neither its word nor its position. At every other site it is the
// standard element-wise inverted dropout.
#include "../common/group_mask.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class TokenDropout final : public Dropout {
 public:
  explicit TokenDropout(const BuildContext& ctx)
      : rate_(ctx.options.get_real("rate")), site_(ctx.dropout_site), rng_(ctx.dropout_rng) {
    ATTNLAB_CHECK(rate_ >= 0.0 && rate_ < 1.0, "dropout token: rate must be in [0, 1), got {}", rate_);
  }

  Tensor forward(const Tensor& x) override {
    if (!training() || rate_ == 0.0) return x;
    ATTNLAB_CHECK(rng_ != nullptr, "dropout token: training with rate {} needs the context's dropout_rng", rate_);
    if (site_ != DropoutSite::embedding) return dropout(x, rate_, *rng_);
    ATTNLAB_CHECK(x.rank() == 3, "dropout token: embeddings must be [batch, length, d_model], got {}",
                  x.shape().str());
    return dropout_common::drop_groups(x, x.dim(0) * x.dim(1), rate_, *rng_);
  }
  double rate() const override { return rate_; }

 private:
  double rate_;
  DropoutSite site_;
  Generator* rng_;
};

void register_plugins(Registry& registry) {
  registry.add_dropout({.name = "token", .version = "1.0.0",
                        .description = "token dropout: whole token embeddings at the embedding site; standard "
                                       "dropout elsewhere",
                        .options = {{"rate", OptionType::real, OptionValue(0.1), "drop probability (set per site)"}}},
                       [](const BuildContext& ctx) { return std::make_shared<TokenDropout>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("token", "1.0.0", "token (word) dropout", register_plugins)
