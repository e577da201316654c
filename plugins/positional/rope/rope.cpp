// positional "rope": rotary position embeddings (Su et al. 2021, RoFormer). Nothing is added to the
// embeddings; inside every self-attention layer each query and key of head size d is rotated in
// d/2 planes by angles proportional to its position,
//   rot(x, p)[i]         = x[i] cos(p w_i) - x[i + d/2] sin(p w_i),
//   rot(x, p)[i + d/2]   = x[i + d/2] cos(p w_i) + x[i] sin(p w_i),   w_i = base^(-2i/d), i < d/2,
// so that rot(q, m) . rot(k, n) depends on the positions only through n - m. The planes pair
// dimension i with i + d/2 (the "rotate half" layout). No parameters.
#include <cmath>
#include <vector>

#include "attnlab/ops.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class Rotary final : public AttentionPositions {
 public:
  Rotary(std::int64_t head_size, double base) : d_(head_size), base_(base) {}

  // x [B, h, T, d] -> x cos + rotate_half(x) sin, with the [T, d] tables of positions offset ...
  Tensor rotate(const Tensor& x, std::int64_t offset) const override {
    ATTNLAB_CHECK(x.rank() == 4 && x.dim(3) == d_, "positional rope: expected [batch, heads, length, {}], got {}",
                  d_, x.shape().str());
    ATTNLAB_CHECK(offset >= 0, "positional rope: negative offset {}", offset);
    const std::int64_t t = x.dim(2), half = d_ / 2;
    std::vector<double> cos_table(static_cast<std::size_t>(t * d_)), sin_table(cos_table.size());
    for (std::int64_t p = 0; p < t; ++p)
      for (std::int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(offset + p) * std::pow(base_, -2.0 * static_cast<double>(i) / d_);
        for (std::int64_t at : {p * d_ + i, p * d_ + i + half}) {
          cos_table[static_cast<std::size_t>(at)] = std::cos(angle);
          sin_table[static_cast<std::size_t>(at)] = std::sin(angle);
        }
      }
    auto table = [&](const std::vector<double>& v) {
      return Tensor::from_vector<double>({t, d_}, v).to(x.dtype()).to(x.device());
    };
    auto halves = split(x, 3, {half, half});
    Tensor rotated_half = concat({scale(halves[1], -1.0), halves[0]}, 3);  // (-x2, x1)
    return add(mul(x, table(cos_table)), mul(rotated_half, table(sin_table)));
  }

 private:
  std::int64_t d_;
  double base_;
};

class Rope final : public PositionalEncoding {
 public:
  explicit Rope(const BuildContext& ctx) : base_(ctx.options.get_real("base")) {
    ATTNLAB_CHECK(base_ > 1.0, "positional rope: base must be > 1, got {}", base_);
    ATTNLAB_CHECK(ctx.dims.d_k % 2 == 0, "positional rope: the head size d_k = {} must be even (queries and keys "
                  "rotate in pairs of dimensions)", ctx.dims.d_k);
  }
  Tensor forward(const Tensor& x, std::int64_t) override { return x; }
  std::shared_ptr<AttentionPositions> attention_positions(const BuildContext& ctx) const override {
    return std::make_shared<Rotary>(ctx.dims.d_k, base_);
  }

 private:
  double base_;
};

void register_plugins(Registry& registry) {
  registry.add_positional(
      {.name = "rope",
       .version = "1.0.0",
       .description = "rotary position embeddings on the queries and keys of self-attention (Su et al. 2021)",
       .options = {{"base", OptionType::real, OptionValue(10000.0), "wavelength base of the rotation angles"}},
       .positions = {.rotate = true}},
      [](const BuildContext& ctx) { return std::make_shared<Rope>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("rope", "1.0.0", "rotary position embeddings", register_plugins)
