// Bias + dropout + residual + layer norm, forward and backward.
#include "attnlab/ops/dropout_add_layer_norm.h"

#include <cmath>

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/dropout_add_layer_norm_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

constexpr std::string_view kOp = "dropout_add_layer_norm";

void check_vector(const Tensor& x, const Tensor& t, std::string_view what) {
  if (!t.defined()) return;
  detail::check_same_device(kOp, x, t);
  ATTNLAB_CHECK(t.dtype() == x.dtype(), "{}: {} dtype differs from x: {} and {}", kOp, what, t.str(), x.str());
  ATTNLAB_CHECK(t.shape() == Shape{x.dim(-1)}, "{}: {} must have shape [{}] (the last axis of x {}), got {}", kOp,
                what, x.dim(-1), x.shape().str(), t.shape().str());
}

void check_inputs(const DropoutAddLayerNormInputs& in, double p, double eps) {
  detail::check_defined(kOp, in.x, "x");
  detail::check_defined(kOp, in.residual, "residual");
  // The dtypes of both backends (as layer_norm), checked here so that a bad call draws nothing.
  ATTNLAB_CHECK(in.x.dtype() == DType::f32 || in.x.dtype() == DType::f64,
                "{}: dtype {} is not supported (f32, f64), x is {}", kOp, dtype_name(in.x.dtype()), in.x.str());
  ATTNLAB_CHECK(in.x.rank() >= 1, "{}: x must have rank >= 1, got shape {}", kOp, in.x.shape().str());
  detail::check_same_device(kOp, in.x, in.residual);
  detail::check_same_dtype(kOp, in.x, in.residual);
  ATTNLAB_CHECK(in.residual.shape() == in.x.shape(), "{}: residual {} must have the shape of x {}", kOp,
                in.residual.shape().str(), in.x.shape().str());
  check_vector(in.x, in.bias, "bias");
  check_vector(in.x, in.gamma, "gamma");
  check_vector(in.x, in.beta, "beta");
  ATTNLAB_CHECK(std::isfinite(p) && p >= 0.0 && p < 1.0, "{}: p must be in [0, 1), got p = {}", kOp, p);
  ATTNLAB_CHECK(std::isfinite(eps) && eps >= 0, "{}: eps must be finite and >= 0, got {}", kOp, eps);
}

// With keep_i the mask bit of element i, c = 1 / (1 - p) and shat = (s - mean) * rstd per row:
//   s = r + keep * c * (x + b),   y = shat * gamma + beta.
// The layer-norm part is layer_norm's (layer_norm.cpp has the derivation):
//   ds = rstd (g - mean_j(g) - shat mean_j(g shat)) with g = dy * gamma,
//   dgamma = sum_rows dy * shat,   dbeta = sum_rows dy.
// The rest is linear in s: ds/dr = 1 and ds_i/dx_i = keep_i c, so
//   dresidual = ds,   dx = keep * c * ds,   dbias = sum_rows dx.
// The mask is regenerated from (seed, offset); s, mean and rstd come from the forward.
class DropoutAddLayerNormNode final : public Node {
 public:
  DropoutAddLayerNormNode(Tensor sum, const Tensor& gamma, Tensor mean, Tensor rstd, detail::DropoutMask mask)
      : sum_(std::move(sum)),
        gamma_(gamma.defined() ? gamma.detach() : Tensor()),
        mean_(std::move(mean)),
        rstd_(std::move(rstd)),
        mask_(mask) {}

  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor dy = detail::grad_or_zeros(grads, 0, sum_.shape(), sum_.dtype(), sum_.device());
    auto wants = [&](std::size_t i) { return i < next.size() && next[i].node != nullptr; };
    const Shape vec{sum_.dim(-1)};
    detail::DropoutAddLayerNormGrads g;
    // dx is needed for x and for the bias, ds for all three of x, bias and residual.
    if (wants(0) || wants(1) || wants(2)) g.ds = Tensor::empty_like(sum_);
    if (wants(0) || wants(1)) g.dx = Tensor::empty_like(sum_);
    if (wants(1)) g.dbias = Tensor::empty(vec, sum_.dtype(), sum_.device());
    if (wants(3)) g.dgamma = Tensor::empty(vec, sum_.dtype(), sum_.device());
    if (wants(4)) g.dbeta = Tensor::empty(vec, sum_.dtype(), sum_.device());
    ATTNLAB_DISPATCH(sum_.device(), detail::dropout_add_layer_norm_backward, sum_, gamma_, mean_, rstd_, dy, mask_,
                     g);
    return {g.dx, g.dbias, g.ds, g.dgamma, g.dbeta};
  }
  void release() override { sum_ = gamma_ = mean_ = rstd_ = Tensor(); }
  std::string_view name() const override { return kOp; }

 private:
  Tensor sum_, gamma_, mean_, rstd_;  // s = r + dropout(x + b), and the row statistics of s
  detail::DropoutMask mask_;
};

}  // namespace

Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, std::uint64_t seed,
                              std::uint64_t offset, double eps) {
  check_inputs(in, p, eps);
  const Tensor& x = in.x;
  const std::int64_t d = x.dim(-1);
  const Shape rows{d == 0 ? 0 : x.numel() / d};
  const detail::DropoutMask mask{p, seed, offset};
  const bool grad = any_requires_grad({&in.x, &in.bias, &in.residual, &in.gamma, &in.beta});
  Tensor y = Tensor::empty_like(x);
  // s is kept only for the backward; without one the kernels write it into y and normalize in place.
  Tensor sum = grad ? Tensor::empty_like(x) : y;
  Tensor mean = Tensor::empty(rows, x.dtype(), x.device());
  Tensor rstd = Tensor::empty(rows, x.dtype(), x.device());
  ATTNLAB_DISPATCH(x.device(), detail::dropout_add_layer_norm_forward, in, mask, eps, sum, y, mean, rstd);
  if (grad)
    record(std::make_shared<DropoutAddLayerNormNode>(sum, in.gamma, mean, rstd, mask),
           {&in.x, &in.bias, &in.residual, &in.gamma, &in.beta}, y);
  return y;
}

Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, Generator& generator, double eps) {
  check_inputs(in, p, eps);
  // As dropout(x, p, generator): the stream advances by x's size whatever p is.
  const Generator::Draw draw = generator.reserve(static_cast<std::uint64_t>(in.x.numel()));
  return dropout_add_layer_norm(in, p, draw.seed, draw.offset, eps);
}

}  // namespace attnlab
