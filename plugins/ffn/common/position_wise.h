#pragma once
// The position-wise feed-forward network FFN(x) = act(x W1 + b1) W2 + b2 (paper, sec. 3.3), with
// dropout on the hidden activation at the context's ffn rate. Shared by the ffn plugins, which
// differ only in the activation. FirstLayer, when given, computes act(x W1 + b1) as one op from x,
// W1 and b1 (relu: the core's linear_relu, whose CPU values and gradients are relu(linear)'s to
// the bit); the parameters, their names and their initialisation are the same either way.
#include "attnlab/nn/linear.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::plugins {

template <Tensor (*Activation)(const Tensor&),
          Tensor (*FirstLayer)(const Tensor&, const Tensor&, const Tensor&) = nullptr>
class PositionWiseFfn final : public FeedForward {
 public:
  explicit PositionWiseFfn(const BuildContext& ctx) : d_model_(ctx.dims.d_model) {
    ATTNLAB_CHECK(ctx.init != nullptr, "ffn: the build context has no init generator");
    ATTNLAB_CHECK(ctx.dims.d_ff > 0, "ffn: d_ff must be positive, got {}", ctx.dims.d_ff);
    w1_ = register_module("w1", std::make_shared<nn::Linear>(d_model_, ctx.dims.d_ff, true, *ctx.init,
                                                            ctx.dtype, ctx.device));
    w2_ = register_module("w2", std::make_shared<nn::Linear>(ctx.dims.d_ff, d_model_, true, *ctx.init,
                                                            ctx.dtype, ctx.device));
    dropout_ = register_module("dropout", ctx.make_dropout(ctx.dropout.ffn, DropoutSite::ffn));
  }

  Tensor forward(const Tensor& x) override {
    ATTNLAB_CHECK(x.rank() >= 1 && x.dim(-1) == d_model_, "ffn: input must be [..., d_model={}], got {}",
                  d_model_, x.shape().str());
    Tensor hidden;
    if constexpr (FirstLayer != nullptr)
      hidden = FirstLayer(x, w1_->weight(), w1_->bias());
    else
      hidden = Activation(w1_->forward(x));
    return w2_->forward(dropout_->forward(hidden));
  }

 private:
  std::int64_t d_model_;
  std::shared_ptr<nn::Linear> w1_, w2_;
  std::shared_ptr<Dropout> dropout_;
};

}  // namespace attnlab::plugins
