// ffn "gelu": FFN(x) = GELU(x W1 + b1) W2 + b2 (Hendrycks & Gimpel 2016; as in BERT and GPT).
#include "../common/position_wise.h"
#include "attnlab/ops/activation.h"
#include "attnlab/plugin/plugin_api.h"

namespace {

void register_plugins(attnlab::Registry& registry) {
  registry.add_ffn({.name = "gelu", .version = "1.0.0",
                    .description = "GELU(x W1 + b1) W2 + b2 with the exact Gaussian CDF", .options = {}},
                   [](const attnlab::BuildContext& ctx) {
                     return std::make_shared<attnlab::plugins::PositionWiseFfn<attnlab::gelu>>(ctx);
                   });
}

}  // namespace

ATTNLAB_PLUGIN("gelu", "1.0.0", "position-wise feed-forward network with GELU", register_plugins)
