// dropout "token": token (word) dropout at the embedding site (Gal and Ghahramani 2016; Sennrich,
// Haddow and Birch 2016): the whole vector of a token position, [B, T, d_model] -> one decision
// per (sequence, position), is kept with probability 1 - rate and scaled by 1 / (1 - rate); a
// dropped token contributes neither its word nor its position. At every other site it is the
// standard element-wise inverted dropout.
#include "../common/group_mask.h"
#include "../common/site_dropout.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class TokenDropout final : public dropout_common::SiteDropout {
 public:
  explicit TokenDropout(const BuildContext& ctx) : SiteDropout("token", ctx, DropoutSite::embedding) {}

 private:
  Tensor drop_at_site(const Tensor& x, Generator& rng) override {
    ATTNLAB_CHECK(x.rank() == 3, "dropout token: embeddings must be [batch, length, d_model], got {}",
                  x.shape().str());
    return dropout_common::drop_groups(x, x.dim(0) * x.dim(1), rate_, rng);
  }
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
