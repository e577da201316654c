// attention "local_window": multi-head scaled dot-product attention restricted to a neighbourhood
// of r positions around each query, the "restricted self-attention" that Vaswani et al. (2017,
// Table 1 and sec. 7) name as future work for long inputs: O(r n d) instead of O(n^2 d).
// Query i (at absolute position i + Tk - Tq) sees key j only when |i + Tk - Tq - j| <= r.
#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/nn/linear.h"
#include "attnlab/ops.h"
#include "attnlab/plugin/attention_util.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class LocalWindowAttention final : public Attention {
 public:
  explicit LocalWindowAttention(const BuildContext& ctx)
      : d_model_(ctx.dims.d_model), h_(ctx.dims.n_heads), d_k_(ctx.dims.d_k), d_v_(ctx.dims.d_v),
        window_(ctx.options.get_int("window")), dtype_(ctx.dtype), device_(ctx.device) {
    ATTNLAB_CHECK(window_ >= 0, "attention local_window: window must be >= 0, got {}", window_);
    Generator& init = *ctx.init;
    w_q_ = register_module("w_q", std::make_shared<nn::Linear>(d_model_, h_ * d_k_, true, init, dtype_, device_));
    w_k_ = register_module("w_k", std::make_shared<nn::Linear>(d_model_, h_ * d_k_, true, init, dtype_, device_));
    w_v_ = register_module("w_v", std::make_shared<nn::Linear>(d_model_, h_ * d_v_, true, init, dtype_, device_));
    w_o_ = register_module("w_o", std::make_shared<nn::Linear>(h_ * d_v_, d_model_, true, init, dtype_, device_));
    dropout_ = register_module("dropout", ctx.make_dropout(ctx.dropout.attention));
  }

  Tensor forward(const AttentionInputs& in) override {
    check_attention_input("local_window", "query", in.query, d_model_);
    const std::int64_t tq = in.query.dim(1);
    Tensor q = split_heads(w_q_->forward(in.query), h_);  // [B, h, Tq, d_k]
    // Projections, KV cache and cross-attention reuse as every attention plugin does them.
    auto [k, v] = attention_keys_values(
        "local_window", in, d_model_, [&](const Tensor& x) { return split_heads(w_k_->forward(x), h_); },
        [&](const Tensor& x) { return split_heads(w_v_->forward(x), h_); });
    const std::int64_t tk = k.dim(2);
    Tensor mask = window_mask(tq, tk, in.key_padding_mask);  // [B or 1, 1, Tq, Tk]
    Tensor scores = scale(matmul(q, k, false, true), 1.0 / std::sqrt(static_cast<double>(d_k_)));
    Tensor weights = dropout_->forward(softmax(scores, mask, in.causal));
    return w_o_->forward(merge_heads(matmul(weights, v)));
  }

 private:
  // The window as an additive mask, combined with the key padding mask [B, Tk] when there is one.
  Tensor window_mask(std::int64_t tq, std::int64_t tk, const Tensor& padding) const {
    const std::int64_t rows = padding.defined() ? padding.dim(0) : 1;
    const std::vector<double> pad = padding.defined() ? padding.to_vector<double>()
                                                      : std::vector<double>(static_cast<std::size_t>(tk), 0.0);
    std::vector<double> m(static_cast<std::size_t>(rows * tq * tk), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t i = 0; i < tq; ++i)
        for (std::int64_t j = 0; j < tk; ++j) {
          const bool outside = std::abs(i + tk - tq - j) > window_;
          m[static_cast<std::size_t>((r * tq + i) * tk + j)] =
              outside ? -std::numeric_limits<double>::infinity() : pad[static_cast<std::size_t>(r * tk + j)];
        }
    return Tensor::from_vector<double>({rows, 1, tq, tk}, m).to(dtype_).to(device_);
  }

  std::int64_t d_model_, h_, d_k_, d_v_, window_;
  DType dtype_;
  Device device_;
  std::shared_ptr<nn::Linear> w_q_, w_k_, w_v_, w_o_;
  std::shared_ptr<Dropout> dropout_;
};

void register_plugins(Registry& registry) {
  registry.add_attention(
      {.name = "local_window",
       .version = "0.1.0",
       .description = "multi-head attention restricted to a window of r positions (paper, sec. 7)",
       .options = {{"window", OptionType::integer, OptionValue(std::int64_t{16}),
                    "r: a query sees keys at most r positions away"}}},
      [](const BuildContext& ctx) { return std::make_shared<LocalWindowAttention>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("local_window", "0.1.0", "restricted (local) self-attention", register_plugins)
