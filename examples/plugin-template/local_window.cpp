// attention "local_window": multi-head scaled dot-product attention restricted to a neighbourhood
// of r positions around each query, the "restricted self-attention" that Vaswani et al. (2017,
// Table 1 and sec. 7) name as future work for long inputs: O(r n d) instead of O(n^2 d).
// Query i (at absolute position i + Tk - Tq) sees key j only when |i + Tk - Tq - j| <= r.
//
// ProjectedAttention supplies the paper's four projections (w_q, w_k, w_v, w_o, with scaled_dot's
// names, initialisation order and `bias` option, so one seed gives both plugins the same weights),
// the KV-cache protocol and rotary positions (the positional plugin "rope"): the plugin opts in by
// declaring the rotation hook in its capabilities, and this file only writes the attention core.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "attnlab/ops.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class LocalWindowAttention final : public ProjectedAttention {
 public:
  // The window is checked before ProjectedAttention creates any weight.
  explicit LocalWindowAttention(const BuildContext& ctx)
      : ProjectedAttention("local_window", ctx,
                           [&] {
                             ATTNLAB_CHECK(ctx.options.get_int("window") >= 0,
                                           "attention local_window: window must be >= 0, got {}",
                                           ctx.options.get_int("window"));
                           }),
        window_(ctx.options.get_int("window")) {
    dropout_ = register_module("dropout", ctx.make_dropout(ctx.dropout.attention, DropoutSite::attention));
  }

  Tensor forward(const AttentionInputs& in) override {
    check_attention_input("local_window", "query", in.query, d_model_);
    auto [k, v] = projected_keys_values(in);     // [B, h, Tk, d_k], [B, h, Tk, d_v] (rotated keys)
    Tensor q = projected_queries(in, k.dim(2));  // [B, h, Tq, d_k] (rotated queries)
    Tensor weights = dropout_->forward(weights_of(q, k, in.key_padding_mask, in.causal));
    return w_o_->forward(merge_heads(matmul(weights, v)));  // [B, Tq, d_model]
  }

  Tensor attend(const AttentionCore& c) override {
    check_attention_core("local_window", c);
    return matmul(weights_of(c.query, c.key, c.key_padding_mask, c.causal), c.value);
  }

 private:
  // softmax(q k^T / sqrt(d_k) + window + padding): [B, h, Tq, d_k], [B, h, Tk, d_k] -> [B, h, Tq, Tk].
  Tensor weights_of(const Tensor& q, const Tensor& k, const Tensor& key_padding_mask, bool causal) const {
    const std::int64_t tq = q.dim(2), tk = k.dim(2);
    Tensor scores = scale(matmul(q, k, false, true), 1.0 / std::sqrt(static_cast<double>(q.dim(3))));
    scores = add(scores, window_mask(tq, tk, scores));  // [Tq, Tk] broadcast over batch and heads
    AttentionInputs masks;
    masks.key_padding_mask = key_padding_mask;
    Tensor padding = attention_padding_mask("local_window", masks, q.dim(0), tk);  // [B, 1, 1, Tk] or undefined
    return softmax(scores, padding, causal);
  }

  // The window as an additive [Tq, Tk] mask (0 inside, -inf outside) in the dtype and on the device
  // of `like`. It depends only on the lengths, so it is built on the host.
  Tensor window_mask(std::int64_t tq, std::int64_t tk, const Tensor& like) const {
    std::vector<double> m(static_cast<std::size_t>(tq * tk), 0.0);
    for (std::int64_t i = 0; i < tq; ++i)
      for (std::int64_t j = 0; j < tk; ++j)
        if (std::abs(i + tk - tq - j) > window_)
          m[static_cast<std::size_t>(i * tk + j)] = -std::numeric_limits<double>::infinity();
    return Tensor::from_vector<double>({tq, tk}, m).to(like.dtype()).to(like.device());
  }

  std::int64_t window_;
  std::shared_ptr<Dropout> dropout_;
};

// What the core ops serve (f32 and f64, any head size, every mask, on the CPU and CUDA), plus
// rotary positions. Score and value terms (alibi, relative) are not applied here, so models with
// those schemes are refused when they are checked, naming both plugins.
AttentionCapabilities capabilities() {
  AttentionCapabilities caps;
  for (auto& d : caps.devices) d.positions = {.rotate = true};
  return caps;
}

void register_plugins(Registry& registry) {
  registry.add_attention(
      {.name = "local_window",
       .version = "0.3.0",
       .description = "multi-head attention restricted to a window of r positions (paper, sec. 7)",
       .options = {{"window", OptionType::integer, OptionValue(std::int64_t{16}),
                    "r: a query sees keys at most r positions away"},
                   {"bias", OptionType::boolean, OptionValue(true),
                    "learn biases in the Q, K, V and output projections"}},
       .capabilities = capabilities()},
      [](const BuildContext& ctx) { return std::make_shared<LocalWindowAttention>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("local_window", "0.3.0", "restricted (local) self-attention", register_plugins)
