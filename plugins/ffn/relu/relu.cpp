// ffn "relu": FFN(x) = max(0, x W1 + b1) W2 + b2, the paper's feed-forward network. The first
// layer is the core's linear_relu (one GEMM with the ReLU in its epilogue on CUDA; the same values
// as linear then relu on the CPU), whatever [model] fused_kernels says (docs/architecture.md).
#include "../common/position_wise.h"
#include "attnlab/ops/activation.h"
#include "attnlab/ops/matmul.h"
#include "attnlab/plugin/plugin_api.h"

namespace {

void register_plugins(attnlab::Registry& registry) {
  registry.add_ffn({.name = "relu", .version = "1.0.0",
                    .description = "max(0, x W1 + b1) W2 + b2 (Vaswani et al. 2017, sec. 3.3)", .options = {}},
                   [](const attnlab::BuildContext& ctx) {
                     return std::make_shared<attnlab::plugins::PositionWiseFfn<attnlab::relu, attnlab::linear_relu>>(ctx);
                   });
}

}  // namespace

ATTNLAB_PLUGIN("relu", "1.0.0", "position-wise feed-forward network with ReLU", register_plugins)
