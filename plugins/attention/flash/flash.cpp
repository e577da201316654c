// attention "flash": the paper's multi-head scaled dot-product attention with the attention core
// (softmax(Q K^T / sqrt(d_k) + mask) V, dropout on the weights) fused into one op that never
// stores the [Tq, Tk] scores (flash_attention.h). The projections, their parameter names and
// their initialisation order are scaled_dot's, so checkpoints of the two are interchangeable and
// one seed gives both the same weights. Rotary positions are applied to the queries and keys
// before the kernels (they need nothing of the core); score and value terms enter the kernels in
// kernel form (attnlab/plugin/kernel_terms.h: ALiBi's distance bias, Shaw et al.'s relative keys
// and values); a scheme that gives its terms only as [Tq, Tk] tensors is refused. Score
// expressions (score_mod, mask_mod) are compiled into its CPU tiles and, through NVRTC, into its
// CUDA kernels (every family), whole tiles that mask_mod removes skipped. Under bf16 compute precision on CUDA the core runs in bf16
// (flash_attention_in_precision).
#include <cmath>

#include "attnlab/dispatch.h"
#include "attnlab/nn/linear.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"
#include "flash_attention.h"
#include "flash_attention_kernels.h"

namespace {

using namespace attnlab;

class FlashAttention final : public ProjectedAttention {
 public:
  explicit FlashAttention(const BuildContext& ctx)
      : ProjectedAttention("flash", ctx, [&] { check_context(ctx); }, /*key_bias=*/true, /*score_expressions=*/true),
        rate_(ctx.dropout.attention),
        rng_(ctx.dropout_rng) {}

  Tensor forward(const AttentionInputs& in) override {
    check_attention_input("flash", "query", in.query, d_model_);
    const std::int64_t b = in.query.dim(0);
    auto [k, v] = projected_keys_values(in);     // [B, h, Tk, d_k], [B, h, Tk, d_v] (rotated keys)
    Tensor q = projected_queries(in, k.dim(2));  // [B, h, Tq, d_k] (rotated queries)
    attention_padding_mask("flash", in, b, k.dim(2));  // checks the mask is [B, Tk]
    flash::FlashOptions o;
    o.key_padding_mask = in.key_padding_mask;
    o.causal = in.causal;
    o.scale = 1.0 / std::sqrt(static_cast<double>(d_k_));
    if (in.positions) position_terms(*in.positions, q, k.dim(2), o);
    if (auto call = score_expr_call(in, q, k.dim(2))) o.expressions = std::make_shared<expr::ScoreExprCall>(std::move(*call));
    if (training() && rate_ > 0.0) {
      ATTNLAB_CHECK(rng_ != nullptr, "attention flash: training with attention dropout {} needs the context's "
                                     "dropout_rng", rate_);
      // The draw the standard dropout plugin makes for the [B, h, Tq, Tk] weights of scaled_dot:
      // the same generator position, the same element numbering, the same mask.
      const Generator::Draw draw = rng_->reserve(static_cast<std::uint64_t>(b * h_ * q.dim(2) * k.dim(2)));
      o.dropout = rate_;
      o.seed = draw.seed;
      o.offset = draw.offset;
      o.seed_slot = draw.seed_on(q.device()).slot;
    }
    // [B, h, Tq, d_v] -> [B, Tq, d]
    return w_o_->forward(merge_heads(flash::flash_attention_in_precision(q, k, v, o)));
  }

  // The fused core alone (no projections, no dropout), for benchmarks and core comparisons.
  Tensor attend(const AttentionCore& c) override {
    check_attention_core("flash", c, true, true);
    flash::FlashOptions o;
    o.key_padding_mask = c.key_padding_mask;
    o.causal = c.causal;
    o.scale = 1.0 / std::sqrt(static_cast<double>(c.query.dim(3)));
    const auto [q, k] = rotated_core(c);
    if (c.positions) position_terms(*c.positions, q, k.dim(2), o);
    if (c.expressions) o.expressions = std::make_shared<expr::ScoreExprCall>(*c.expressions);
    return flash::flash_attention_in_precision(q, k, c.value, o);
  }

 private:
  // What the kernels serve, checked before any weight is allocated.
  static void check_context(const BuildContext& ctx) {
    if (ctx.device.is_cuda()) {
      const std::string problem = flash::cuda_head_dims_problem(ctx.dims.d_k, ctx.dims.d_v);
      ATTNLAB_CHECK(problem.empty(), "{}", problem);
    }
    // The weights' dropout is fused into the kernels: it is the standard plugin's inverted dropout.
    ATTNLAB_CHECK(ctx.dropout.attention == 0.0 || ctx.dropout_plugin == "standard",
                  "attention flash: attention dropout {} is fused into the kernels as the 'standard' dropout, so "
                  "dropout plugin '{}' cannot apply there; set model.attention_dropout = 0 or use "
                  "fallback = \"scaled_dot\" in [model.attention]",
                  ctx.dropout.attention, ctx.dropout_plugin);
  }

  // The scheme's score and value terms in kernel form, for queries q at positions keys - Tq ...
  // A scheme that has terms only as tensors is refused the first time it is seen (probed with one
  // query and one key, so that no [Tq, Tk] tensor is built).
  void position_terms(const AttentionPositions& p, const Tensor& q, std::int64_t keys, flash::FlashOptions& o) {
    const std::int64_t q_offset = keys - q.dim(2);
    o.score_terms = p.kernel_score_terms(q, q_offset, keys);
    o.value_terms = p.kernel_value_terms();
    if (o.score_terms.any() || o.value_terms.any() || probed_ == &p) return;
    const Tensor one = Tensor::zeros({1, q.dim(1), 1, q.dim(3)}, q.dtype(), q.device());
    const bool scores = p.score_terms(one, 0, 1).defined();
    const bool values = p.value_terms(Tensor::full({1, q.dim(1), 1, 1}, 1.0, q.dtype(), q.device()), 0).defined();
    const char* what = scores && values ? "score and value terms" : scores ? "score terms" : "value terms";
    ATTNLAB_CHECK(!scores && !values, "attention flash: the positional scheme gives its {} as [Tq, Tk] tensors "
                  "only, not in kernel form (attnlab/plugin/kernel_terms.h); set fallback = \"scaled_dot\" in "
                  "[model.attention]", what);
    probed_ = &p;
  }

  double rate_;
  Generator* rng_;
  const AttentionPositions* probed_ = nullptr;  // a scheme found to have no terms outside kernel form
};

AttentionCapabilities capabilities() {
  AttentionCapabilities caps;
  caps.devices = {
      {.device = DeviceKind::cpu,
       .dtypes = {DType::f32, DType::f64},
       .positions = {.rotate = true, .score_terms = true, .value_terms = true, .kernel_form = true},
       .score_expressions = true},
      {.device = DeviceKind::cuda,
       .dtypes = {DType::f32, DType::bf16},
       .head_dims = {flash::kCudaHeadDims.begin(), flash::kCudaHeadDims.end()},
       .positions = {.rotate = true, .score_terms = true, .value_terms = true, .kernel_form = true},
       .score_expressions = true,
       .kernels = [](int index) -> std::string {
         ATTNLAB_CUDA_ONLY("flash's CUDA kernels", return flash::detail::flash_kernels_cuda(index));
       }},
  };
  return caps;
}

void register_plugins(Registry& registry) {
  registry.add_attention(
      {.name = "flash",
       .version = "1.0.0",
       .description = "multi-head scaled dot-product attention as one fused, tiled kernel with an online softmax "
                      "(FlashAttention-2 style; same parameters as scaled_dot)",
       .options = {{"bias", OptionType::boolean, OptionValue(true),
                    "learn biases in the Q, K, V and output projections"}},
       .capabilities = capabilities()},
      [](const BuildContext& ctx) { return std::make_shared<FlashAttention>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("flash", "1.0.0", "fused tiled attention (online softmax, CPU and CUDA kernels)", register_plugins)
