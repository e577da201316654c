// positional "learned": a trained table of position embeddings (Table 3 row E; Gehring et al.
// 2017), at most max_length positions.
#include <cmath>
#include <vector>

#include "attnlab/init.h"
#include "attnlab/ops.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class Learned final : public PositionalEncoding {
 public:
  explicit Learned(const BuildContext& ctx) : d_model_(ctx.dims.d_model), device_(ctx.device) {
    ATTNLAB_CHECK(ctx.init != nullptr, "positional learned: the build context has no init generator");
    const std::int64_t option = ctx.options.get_int("max_length");
    max_length_ = option > 0 ? option : ctx.dims.max_length;
    ATTNLAB_CHECK(max_length_ > 0, "positional learned: max_length must be positive, got {}", max_length_);
    // N(0, d_model^-1/2), the scale of the token embeddings before their sqrt(d_model) factor.
    table_ = register_parameter(
        "table", normal({max_length_, d_model_}, 0.0, 1.0 / std::sqrt(static_cast<double>(d_model_)),
                        *ctx.init, ctx.dtype, ctx.device));
  }

  Tensor forward(const Tensor& x, std::int64_t offset) override {
    ATTNLAB_CHECK(x.rank() == 3 && x.dim(2) == d_model_,
                  "positional learned: input must be [batch, length, d_model={}], got {}", d_model_,
                  x.shape().str());
    const std::int64_t t = x.dim(1);
    ATTNLAB_CHECK(offset >= 0 && offset + t <= max_length_,
                  "positional learned: position {} is past max_length {} (raise max_length in the "
                  "experiment's [model.positional] table or model.max_length)",
                  offset + t - 1, max_length_);
    std::vector<std::int64_t> positions(static_cast<std::size_t>(t));
    for (std::int64_t i = 0; i < t; ++i) positions[static_cast<std::size_t>(i)] = offset + i;
    Tensor ids = Tensor::from_vector<std::int64_t>({t}, positions).to(device_);
    return add(x, embedding(table_, ids));
  }

 private:
  std::int64_t d_model_;
  std::int64_t max_length_ = 0;
  Device device_;
  Tensor table_;  // [max_length, d_model]
};

void register_plugins(Registry& registry) {
  registry.add_positional(
      {.name = "learned",
       .version = "1.0.0",
       .description = "learned position embeddings (Table 3 row E)",
       .options = {{"max_length", OptionType::integer, OptionValue(std::int64_t{0}),
                    "table size; 0 takes the model's max_length"}}},
      [](const BuildContext& ctx) { return std::make_shared<Learned>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("learned", "1.0.0", "learned position embeddings", register_plugins)
