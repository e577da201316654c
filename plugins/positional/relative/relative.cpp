// positional "relative": relative position representations (Shaw, Uszkoreit and Vaswani 2018).
// Nothing is added to the embeddings; every self-attention layer learns vectors a^K_r [d_k] and
// a^V_r [d_v] for the clipped distance r = clip(j - i, -k, k), shared by the heads, and
//   e_ij = q_i . (k_j + a^K_ij) / sqrt(d_k),   z_i = sum_j w_ij (v_j + a^V_ij).
// The terms are given in kernel form (kernel_terms.h): q_i . a^K_r for the 2k + 1 distances r
// (one product of q with the table), gathered by distance, and a^V by distance.
#include <cmath>

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

  // In kernel form (kernel_terms.h): each query's score for each clipped distance,
  // q_i . a^K_r / sqrt(d_k) as [B, h, Tq, 2k + 1], and the value of each distance, a^V_r. Their
  // dense expansions (AttentionPositions::score_terms and value_terms) are the paper's terms.
  KernelScoreTerms kernel_score_terms(const Tensor& q, std::int64_t, std::int64_t) const override {
    ATTNLAB_CHECK(q.rank() == 4 && q.dim(3) == keys_.dim(1), "positional relative: expected queries [batch, heads, "
                  "length, {}], got {}", keys_.dim(1), q.shape().str());
    const double s = 1.0 / std::sqrt(static_cast<double>(q.dim(3)));
    return {.bucket_scores = scale(matmul(q, keys_, false, true), s), .clip = clip_};  // [B, h, Tq, 2k + 1]
  }
  KernelValueTerms kernel_value_terms() const override {
    if (!values_.defined()) return {};
    return {.bucket_values = values_, .clip = clip_};
  }

 private:
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
       .positions = {.score_terms = true, .value_terms = true, .kernel_form = true}},
      [](const BuildContext& ctx) { return std::make_shared<Relative>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("relative", "1.0.0", "relative position representations", register_plugins)
