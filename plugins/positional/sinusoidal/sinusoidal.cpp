// positional "sinusoidal": PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),
//                          PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))   (paper, sec. 3.5).
// A fixed table; it grows on demand, so there is no hard maximum length.
#include <cmath>
#include <vector>

#include "attnlab/ops.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class Sinusoidal final : public PositionalEncoding {
 public:
  explicit Sinusoidal(const BuildContext& ctx)
      : d_model_(ctx.dims.d_model), base_(ctx.options.get_real("base")), dtype_(ctx.dtype),
        device_(ctx.device) {
    ATTNLAB_CHECK(base_ > 1.0, "positional sinusoidal: base must be > 1, got {}", base_);
    build(std::max<std::int64_t>(ctx.dims.max_length, 1));
  }

  Tensor forward(const Tensor& x, std::int64_t offset) override {
    ATTNLAB_CHECK(x.rank() == 3 && x.dim(2) == d_model_,
                  "positional sinusoidal: input must be [batch, length, d_model={}], got {}", d_model_,
                  x.shape().str());
    ATTNLAB_CHECK(offset >= 0, "positional sinusoidal: negative offset {}", offset);
    const std::int64_t t = x.dim(1);
    if (offset + t > table_.dim(0)) build(2 * (offset + t));
    std::vector<std::int64_t> positions(static_cast<std::size_t>(t));
    for (std::int64_t i = 0; i < t; ++i) positions[static_cast<std::size_t>(i)] = offset + i;
    Tensor ids = Tensor::from_vector<std::int64_t>({t}, positions).to(device_);
    return add(x, embedding(table_, ids));  // [T, d] broadcast over the batch
  }

 private:
  void build(std::int64_t length) {
    std::vector<double> pe(static_cast<std::size_t>(length * d_model_));
    for (std::int64_t pos = 0; pos < length; ++pos) {
      for (std::int64_t i = 0; 2 * i < d_model_; ++i) {
        const double angle =
            static_cast<double>(pos) / std::pow(base_, static_cast<double>(2 * i) / static_cast<double>(d_model_));
        pe[static_cast<std::size_t>(pos * d_model_ + 2 * i)] = std::sin(angle);
        if (2 * i + 1 < d_model_) pe[static_cast<std::size_t>(pos * d_model_ + 2 * i + 1)] = std::cos(angle);
      }
    }
    table_ = Tensor::from_vector<double>({length, d_model_}, pe).to(dtype_).to(device_);
  }

  std::int64_t d_model_;
  double base_;
  DType dtype_;
  Device device_;
  Tensor table_;  // [length, d_model], not a parameter
};

void register_plugins(Registry& registry) {
  registry.add_positional(
      {.name = "sinusoidal",
       .version = "1.0.0",
       .description = "fixed sinusoidal position encodings (Vaswani et al. 2017, sec. 3.5)",
       .options = {{"base", OptionType::real, OptionValue(10000.0), "wavelength base (10000 in the paper)"}}},
      [](const BuildContext& ctx) { return std::make_shared<Sinusoidal>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("sinusoidal", "1.0.0", "fixed sinusoidal position encodings", register_plugins)
