// positional "relative": relative position representations (Shaw, Uszkoreit and Vaswani 2018).
// Nothing is added to the embeddings; every self-attention layer learns vectors a^K_r [d_k] and
// a^V_r [d_v] for the clipped distance r = clip(j - i, -k, k), shared by the heads, and
//   e_ij = q_i . (k_j + a^K_ij) / sqrt(d_k),   z_i = sum_j w_ij (v_j + a^V_ij).
// The q_i . a^K_ij term is computed as one batched product per query position (the paper's
// sec. 3.3): q as [Tq, B h, d_k] against the gathered [Tq, Tk, d_k] representations.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attnlab/init.h"
#include "attnlab/ops.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class RelativePositions final : public AttentionPositions {
 public:
  RelativePositions(const BuildContext& ctx, std::int64_t clip, bool values) : clip_(clip) {
    ATTNLAB_CHECK(ctx.init != nullptr, "positional relative: the layer's build context has no init generator");
    const std::int64_t n = 2 * clip + 1;
    keys_ = register_parameter("relative_keys", normal({n, ctx.dims.d_k}, 0.0, 1.0 / std::sqrt(static_cast<double>(ctx.dims.d_k)),
                                                      *ctx.init, ctx.dtype, ctx.device));
    if (values)
      values_ = register_parameter("relative_values", normal({n, ctx.dims.d_v}, 0.0, 1.0 / std::sqrt(static_cast<double>(ctx.dims.d_v)),
                                                            *ctx.init, ctx.dtype, ctx.device));
  }

  // q [B, h, Tq, d_k] -> [B, h, Tq, keys]: q_i . a^K_{clip(j - i)} / sqrt(d_k).
  Tensor score_terms(const Tensor& q, std::int64_t q_offset, std::int64_t keys) const override {
    ATTNLAB_CHECK(q.rank() == 4 && q.dim(3) == keys_.dim(1), "positional relative: expected queries [batch, heads, "
                  "length, {}], got {}", keys_.dim(1), q.shape().str());
    const std::int64_t b = q.dim(0), h = q.dim(1), tq = q.dim(2);
    Tensor a = embedding(keys_, distances(tq, keys, q_offset, q.device()));          // [Tq, Tk, d_k]
    Tensor per_query = permute(q, {2, 0, 1, 3}).reshape({tq, b * h, q.dim(3)});     // [Tq, B h, d_k]
    Tensor s = matmul(per_query, a, false, true).reshape({tq, b, h, keys});         // [Tq, B, h, Tk]
    return scale(permute(s, {1, 2, 0, 3}), 1.0 / std::sqrt(static_cast<double>(q.dim(3))));
  }

  // weights [B, h, Tq, Tk] -> [B, h, Tq, d_v]: sum_j w_ij a^V_{clip(j - i)}.
  Tensor value_terms(const Tensor& weights, std::int64_t q_offset) const override {
    if (!values_.defined()) return {};
    const std::int64_t b = weights.dim(0), h = weights.dim(1), tq = weights.dim(2), tk = weights.dim(3);
    Tensor a = embedding(values_, distances(tq, tk, q_offset, weights.device()));  // [Tq, Tk, d_v]
    Tensor per_query = permute(weights, {2, 0, 1, 3}).reshape({tq, b * h, tk});    // [Tq, B h, Tk]
    Tensor z = matmul(per_query, cast(a, weights.dtype())).reshape({tq, b, h, values_.dim(1)});
    return permute(z, {1, 2, 0, 3});
  }

 private:
  // [Tq, keys] ids into the tables: clip(j - (q_offset + i), -k, k) + k.
  Tensor distances(std::int64_t tq, std::int64_t keys, std::int64_t q_offset, Device device) const {
    std::vector<std::int64_t> ids(static_cast<std::size_t>(tq * keys));
    for (std::int64_t i = 0; i < tq; ++i)
      for (std::int64_t j = 0; j < keys; ++j)
        ids[static_cast<std::size_t>(i * keys + j)] = std::clamp(j - (q_offset + i), -clip_, clip_) + clip_;
    return Tensor::from_vector<std::int64_t>({tq, keys}, ids).to(device);
  }

  std::int64_t clip_;
  Tensor keys_;    // [2k + 1, d_k]
  Tensor values_;  // [2k + 1, d_v], undefined without value terms
};

class Relative final : public PositionalEncoding {
 public:
  explicit Relative(const BuildContext& ctx)
      : clip_(ctx.options.get_int("max_distance")), values_(ctx.options.get_bool("values")) {
    ATTNLAB_CHECK(clip_ >= 1, "positional relative: max_distance must be >= 1, got {}", clip_);
  }
  Tensor forward(const Tensor& x, std::int64_t) override { return x; }
  std::shared_ptr<AttentionPositions> attention_positions(const BuildContext& ctx) const override {
    return std::make_shared<RelativePositions>(ctx, clip_, values_);
  }

 private:
  std::int64_t clip_;
  bool values_;
};

void register_plugins(Registry& registry) {
  registry.add_positional(
      {.name = "relative",
       .version = "1.0.0",
       .description = "learned relative position representations in self-attention, clipped at k "
                      "(Shaw, Uszkoreit and Vaswani 2018)",
       .options = {{"max_distance", OptionType::integer, OptionValue(std::int64_t{16}),
                    "k: distances beyond +-k share one representation"},
                   {"values", OptionType::boolean, OptionValue(true),
                    "also add relative representations to the values (a^V)"}},
       .positions = {.score_terms = true, .value_terms = true}},
      [](const BuildContext& ctx) { return std::make_shared<Relative>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("relative", "1.0.0", "relative position representations", register_plugins)
