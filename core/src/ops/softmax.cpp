// softmax and log_softmax along the last axis, with an additive broadcast mask and causal masking.
#include "attnlab/ops/softmax.h"

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/op_util.h"
#include "ops/softmax_kernels.h"

namespace attnlab {
namespace {

// Validates x and the mask; returns the mask in x's dtype (or undefined).
Tensor check_inputs(std::string_view op, const Tensor& x, const Tensor& mask, bool causal) {
  detail::check_defined(op, x, "x");
  detail::check_floating(op, x);
  ATTNLAB_CHECK(x.rank() >= 1, "{}: x must have rank >= 1, got shape {}", op, x.shape().str());
  ATTNLAB_CHECK(!causal || x.rank() >= 2,
                "{}: causal masking needs x of rank >= 2 ([..., Tq, Tk]), got shape {}", op,
                x.shape().str());
  if (!mask.defined()) return mask;
  detail::check_same_device(op, x, mask);
  ATTNLAB_CHECK(dtype_is_floating(mask.dtype()), "{}: mask must be a floating (additive) tensor, got {}",
                op, mask.str());
  bool ok = mask.rank() == x.rank();
  for (int k = 0; ok && k < x.rank(); ++k) ok = mask.dim(k) == 1 || mask.dim(k) == x.dim(k);
  ATTNLAB_CHECK(ok,
                "{}: mask shape {} does not broadcast to x shape {} (the mask needs x's rank, "
                "each extent 1 or equal to x's)",
                op, mask.shape().str(), x.shape().str());
  return mask.dtype() == x.dtype() ? mask : mask.to(x.dtype());
}

class SoftmaxNode final : public Node {
 public:
  SoftmaxNode(bool log, const Tensor& y) : log_(log), y_(y.detach()) {}

  // With p = softmax(z) over the unmasked keys and z = x + mask:
  //   softmax:     dp_i/dz_j = p_i (delta_ij - p_j), so
  //                dx_j = sum_i dy_i p_i (delta_ij - p_j) = p_j (dy_j - sum_i dy_i p_i)
  //                       = y_j (dy_j - sum(dy * y)).
  //   log_softmax: y_i = z_i - log sum_k exp(z_k), dy_i/dz_j = delta_ij - p_j, so
  //                dx_j = dy_j - p_j sum_i dy_i = dy_j - exp(y_j) sum(dy).
  // A masked key has y = 0 (softmax) or y = -inf (log_softmax) whatever x is, so it has zero
  // gradient and its dy does not enter the sums: for softmax p_j = 0 does this by itself, for
  // log_softmax the kernel sums dy over the keys with finite y and writes 0 at the others. A fully
  // masked row therefore gets zero gradient. The mask, a constant, gets none.
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor dy = detail::grad_or_zeros(grads, 0, y_.shape(), y_.dtype(), y_.device());
    Tensor dx = Tensor::empty_like(y_);
    ATTNLAB_DISPATCH(y_.device(), detail::softmax_backward, y_, dy, log_, dx);
    return {dx};
  }
  void release() override { y_ = Tensor(); }
  std::string_view name() const override { return log_ ? "log_softmax" : "softmax"; }

 private:
  bool log_;
  Tensor y_;  // the output, detached: both backward formulas need only y
};

Tensor softmax_impl(bool log, const Tensor& x, const Tensor& mask_in, bool causal) {
  const std::string_view op = log ? "log_softmax" : "softmax";
  const Tensor mask = check_inputs(op, x, mask_in, causal);
  Tensor y = Tensor::empty_like(x);
  ATTNLAB_DISPATCH(x.device(), detail::softmax_forward, x, mask, causal, log, y);
  // Only x is recorded: the mask receives no gradient.
  if (any_requires_grad({&x})) record(std::make_shared<SoftmaxNode>(log, y), {&x}, y);
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, const Tensor& mask, bool causal) {
  return softmax_impl(false, x, mask, causal);
}

Tensor log_softmax(const Tensor& x, const Tensor& mask, bool causal) {
  return softmax_impl(true, x, mask, causal);
}

}  // namespace attnlab
