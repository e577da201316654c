// Layer normalization over the last axis, with optional affine gamma and beta, and RMSNorm, the
// same without centring (one node: RMSNorm is layer_norm with the mean fixed at 0).
#include "attnlab/ops/layer_norm.h"
#include "attnlab/ops/rms_norm.h"

#include <cmath>

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/layer_norm_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

void check_param(std::string_view op, const Tensor& x, const Tensor& p, std::string_view what) {
  if (!p.defined()) return;
  detail::check_same_device(op, x, p);
  ATTNLAB_CHECK(p.dtype() == x.dtype(), "{}: {} dtype differs from x: {} and {}", op, what, p.str(), x.str());
  ATTNLAB_CHECK(p.shape() == Shape{x.dim(-1)}, "{}: {} must have shape [{}] (the last axis of x {}), got {}", op,
                what, x.dim(-1), x.shape().str(), p.shape().str());
}

class LayerNormNode final : public Node {
 public:
  LayerNormNode(const Tensor& x, const Tensor& gamma, Tensor mean, Tensor rstd, bool centered)
      : x_(x.detach()),
        gamma_(gamma.defined() ? gamma.detach() : Tensor()),
        mean_(std::move(mean)),
        rstd_(std::move(rstd)),
        centered_(centered) {}

  // Per row, with D the row length, xhat = (x - mean) * rstd, rstd = (var + eps)^(-1/2) and
  // y = xhat * gamma + beta:
  //   dbeta_j  = sum_rows dy_j,   dgamma_j = sum_rows dy_j xhat_j.
  // For x, let g = dy * gamma (the gradient reaching xhat). Since
  //   d mean / dx_j = 1/D,   d var / dx_j = 2 (x_j - mean) / D,   d rstd / dx_j = -rstd^3 (x_j - mean) / D,
  // d xhat_i / dx_j = rstd (delta_ij - 1/D) - (x_i - mean) rstd^3 (x_j - mean) / D
  //                 = rstd (delta_ij - 1/D - xhat_i xhat_j / D), hence
  //   dx_j = sum_i g_i d xhat_i / dx_j = rstd (g_j - mean_i(g_i) - xhat_j mean_i(g_i xhat_i)).
  // RMSNorm: mean = 0 and rstd = (mean(x^2) + eps)^(-1/2), d rstd / dx_j = -rstd^3 x_j / D, so
  // d xhat_i / dx_j = rstd (delta_ij - xhat_i xhat_j / D) and dx_j = rstd (g_j - xhat_j mean_i(g_i xhat_i)).
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor dy = detail::grad_or_zeros(grads, 0, x_.shape(), x_.dtype(), x_.device());
    Tensor dx, dgamma, dbeta;
    if (next[0].node) dx = Tensor::empty_like(x_);
    if (next.size() > 1 && next[1].node) dgamma = Tensor::empty(Shape{x_.dim(-1)}, x_.dtype(), x_.device());
    if (next.size() > 2 && next[2].node) dbeta = Tensor::empty(Shape{x_.dim(-1)}, x_.dtype(), x_.device());
    ATTNLAB_DISPATCH(x_.device(), detail::layer_norm_backward, x_, gamma_, mean_, rstd_, dy, dx, dgamma, dbeta,
                     centered_);
    return {dx, dgamma, dbeta};
  }
  void release() override { x_ = gamma_ = mean_ = rstd_ = Tensor(); }
  std::string_view name() const override { return centered_ ? "layer_norm" : "rms_norm"; }

 private:
  Tensor x_, gamma_, mean_, rstd_;  // mean (0 for RMSNorm) and rstd per row, from the forward
  bool centered_;
};

Tensor norm_last_axis(std::string_view op, const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                      bool centered) {
  detail::check_defined(op, x, "x");
  detail::check_floating(op, x);
  ATTNLAB_CHECK(x.rank() >= 1, "{}: x must have rank >= 1, got shape {}", op, x.shape().str());
  ATTNLAB_CHECK(std::isfinite(eps) && eps >= 0, "{}: eps must be finite and >= 0, got {}", op, eps);
  check_param(op, x, gamma, "gamma");
  check_param(op, x, beta, "beta");
  const std::int64_t d = x.dim(-1);
  const Shape rows{d == 0 ? 0 : x.numel() / d};
  Tensor y = Tensor::empty_like(x);
  Tensor mean = Tensor::empty(rows, x.dtype(), x.device());
  Tensor rstd = Tensor::empty(rows, x.dtype(), x.device());
  ATTNLAB_DISPATCH(x.device(), detail::layer_norm_forward, x, gamma, beta, eps, y, mean, rstd, centered);
  if (any_requires_grad({&x, &gamma, &beta}))
    record(std::make_shared<LayerNormNode>(x, gamma, mean, rstd, centered), {&x, &gamma, &beta}, y);
  return y;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  return norm_last_axis("layer_norm", x, gamma, beta, eps, true);
}

Tensor rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  return norm_last_axis("rms_norm", x, gamma, beta, eps, false);
}

}  // namespace attnlab
