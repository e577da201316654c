// positional "alibi": attention with linear biases (Press et al. 2022). Nothing is added to the
// embeddings; every self-attention head n adds -m_n |i - j| to the score of query position i and
// key position j. For h a power of two the slopes are the geometric sequence m_n = 2^(-8n/h),
// n = 1..h; otherwise the paper's rule: the slopes of the nearest smaller power of two, then every
// other slope of the next power of two. |i - j| makes the bias symmetric for the encoder; under the
// decoder's causal mask only j <= i remain, as in the paper. No parameters.
#include <cmath>
#include <vector>

#include "attnlab/ops.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

std::vector<double> power_of_two_slopes(std::int64_t n) {
  std::vector<double> s;
  for (std::int64_t k = 1; k <= n; ++k) s.push_back(std::pow(2.0, -8.0 * static_cast<double>(k) / n));
  return s;
}

std::vector<double> alibi_slopes(std::int64_t heads) {
  std::int64_t p = 1;
  while (p * 2 <= heads) p *= 2;
  std::vector<double> s = power_of_two_slopes(p);
  const std::vector<double> finer = power_of_two_slopes(2 * p);
  for (std::size_t k = 0; static_cast<std::int64_t>(s.size()) < heads; k += 2) s.push_back(finer[k]);
  return s;
}

class LinearBiases final : public AttentionPositions {
 public:
  explicit LinearBiases(std::int64_t heads) : slopes_(alibi_slopes(heads)) {}

  // q [B, h, Tq, d_k] -> [h, Tq, keys]: -m_n |q_offset + i - j| (q only gives shape and dtype).
  Tensor score_terms(const Tensor& q, std::int64_t q_offset, std::int64_t keys) const override {
    const auto h = static_cast<std::int64_t>(slopes_.size());
    ATTNLAB_CHECK(q.rank() == 4 && q.dim(1) == h, "positional alibi: expected [batch, {} heads, length, d_k], got {}",
                  h, q.shape().str());
    const std::int64_t tq = q.dim(2);
    std::vector<double> bias(static_cast<std::size_t>(h * tq * keys));
    for (std::int64_t n = 0; n < h; ++n)
      for (std::int64_t i = 0; i < tq; ++i)
        for (std::int64_t j = 0; j < keys; ++j)
          bias[static_cast<std::size_t>((n * tq + i) * keys + j)] =
              -slopes_[static_cast<std::size_t>(n)] * static_cast<double>(std::abs(q_offset + i - j));
    return Tensor::from_vector<double>({h, tq, keys}, bias).to(q.dtype()).to(q.device());
  }

 private:
  std::vector<double> slopes_;
};

class Alibi final : public PositionalEncoding {
 public:
  Tensor forward(const Tensor& x, std::int64_t) override { return x; }
  std::shared_ptr<AttentionPositions> attention_positions(const BuildContext& ctx) const override {
    ATTNLAB_CHECK(ctx.dims.n_heads > 0, "positional alibi: n_heads must be positive, got {}", ctx.dims.n_heads);
    return std::make_shared<LinearBiases>(ctx.dims.n_heads);
  }
};

void register_plugins(Registry& registry) {
  registry.add_positional(
      {.name = "alibi",
       .version = "1.0.0",
       .description = "a per-head linear bias -m |i - j| on the self-attention scores (Press et al. 2022)",
       .positions = {.score_terms = true}},
      [](const BuildContext&) { return std::make_shared<Alibi>(); });
}

}  // namespace

ATTNLAB_PLUGIN("alibi", "1.0.0", "attention with linear biases", register_plugins)
