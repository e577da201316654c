// Bias + dropout + residual + layer norm, forward and backward; and the pre-norm pair (the sum and
// its norm).
#include "attnlab/ops/dropout_add_layer_norm.h"

#include <cmath>

#include "attnlab/autograd.h"
#include "attnlab/ops/binary.h"
#include "attnlab/ops/dropout.h"
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
  ATTNLAB_CHECK(std::isfinite(in.residual_scale), "{}: residual_scale must be finite, got {}", kOp,
                in.residual_scale);
}

// What the forward leaves for the backward: s, the row statistics of s, and how s was formed.
struct Saved {
  Tensor sum, gamma, mean, rstd;  // s = a r + dropout(x + b); gamma detached
  detail::DropoutMask mask;
  double residual_scale = 1.0;
  bool centered = true;
  void release() { sum = gamma = mean = rstd = Tensor(); }
};

// The forward of both ops: the kernels write s into `sum` and the norm of s into `y` (sum may be
// y itself: normalized in place).
Saved run_forward(const DropoutAddLayerNormInputs& in, double p, philox::SeedRef seed, std::uint64_t offset,
                  double eps, Tensor sum, Tensor& y) {
  const std::int64_t d = in.x.dim(-1);
  const Shape rows{d == 0 ? 0 : in.x.numel() / d};
  Saved saved{std::move(sum), in.gamma.defined() ? in.gamma.detach() : Tensor(),
              Tensor::empty(rows, in.x.dtype(), in.x.device()), Tensor::empty(rows, in.x.dtype(), in.x.device()),
              detail::DropoutMask{p, seed, offset}, in.residual_scale, in.centered};
  ATTNLAB_DISPATCH(in.x.device(), detail::dropout_add_layer_norm_forward, in, saved.mask, eps, saved.sum, y,
                   saved.mean, saved.rstd);
  return saved;
}

// The kernels' backward from dy at the norm's output into the gradients `g` asks for.
void run_backward(const Saved& s, const Tensor& dy, detail::DropoutAddLayerNormGrads& g) {
  ATTNLAB_DISPATCH(s.sum.device(), detail::dropout_add_layer_norm_backward, s.sum, s.gamma, s.mean, s.rstd, dy, s.mask,
                   s.centered, g);
}

// What both nodes share: the forward's Saved, the gradient buffers the kernels' backward writes,
// and the inputs' gradients {dx, dbias, dresidual, dgamma, dbeta} from them (dresidual = a ds).
class SavedNormNode : public Node {
 public:
  explicit SavedNormNode(Saved saved) : s_(std::move(saved)) {}
  void release() override { s_.release(); }

 protected:
  bool wants(std::size_t i) const { return i < next.size() && next[i].node != nullptr; }

  // dx is needed for x and for the bias, ds for all three of x, bias and residual (or always).
  detail::DropoutAddLayerNormGrads buffers(bool always_ds) const {
    const Tensor& sum = s_.sum;
    const Shape vec{sum.dim(-1)};
    detail::DropoutAddLayerNormGrads g;
    if (always_ds || wants(0) || wants(1) || wants(2)) g.ds = Tensor::empty_like(sum);
    if (wants(0) || wants(1)) g.dx = Tensor::empty_like(sum);
    if (wants(1)) g.dbias = Tensor::empty(vec, sum.dtype(), sum.device());
    if (wants(3)) g.dgamma = Tensor::empty(vec, sum.dtype(), sum.device());
    if (wants(4)) g.dbeta = Tensor::empty(vec, sum.dtype(), sum.device());
    return g;
  }

  std::vector<Tensor> input_grads(const detail::DropoutAddLayerNormGrads& g) const {
    const Tensor dresidual = s_.residual_scale == 1.0 || !wants(2) ? g.ds : scale(g.ds, s_.residual_scale);
    return {g.dx, g.dbias, dresidual, g.dgamma, g.dbeta};
  }

  Saved s_;
};

// With keep_i the mask bit of element i, c = 1 / (1 - p) and shat = (s - mean) * rstd per row:
//   s = a r + keep * c * (x + b),   y = shat * gamma + beta.
// The layer-norm part is layer_norm's (layer_norm.cpp has the derivation; not centred, rms_norm's):
//   ds = rstd (g - mean_j(g) - shat mean_j(g shat)) with g = dy * gamma,
//   dgamma = sum_rows dy * shat,   dbeta = sum_rows dy.
// The rest is linear in s: ds/dr = a and ds_i/dx_i = keep_i c, so
//   dresidual = a ds,   dx = keep * c * ds,   dbias = sum_rows dx.
// The mask is regenerated from (seed, offset); s, mean and rstd come from the forward.
class DropoutAddLayerNormNode final : public SavedNormNode {
 public:
  using SavedNormNode::SavedNormNode;

  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor& sum = s_.sum;
    const Tensor dy = detail::grad_or_zeros(grads, 0, sum.shape(), sum.dtype(), sum.device());
    detail::DropoutAddLayerNormGrads g = buffers(false);
    run_backward(s_, dy, g);
    return input_grads(g);
  }
  std::string_view name() const override { return kOp; }
};

// The pair's backward: with g_s the gradient arriving at sum and dy the one at normed,
//   ds = g_s + (the norm's backward of dy),   dresidual = a ds,   dx = keep * c * ds,
//   dbias = sum_rows dx,   dgamma, dbeta as above,
// all in the kernels' one backward (ds_extra = g_s). Without a gradient at normed, ds is g_s and
// the rest is dropout's own mask (gamma and beta get zeros).
class DropoutAddNormPairNode final : public SavedNormNode {
 public:
  using SavedNormNode::SavedNormNode;

  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    NoGradGuard no_grad;
    const Tensor& sum = s_.sum;
    const Shape vec{sum.dim(-1)};
    const Tensor g_s = !grads.empty() && grads[0].defined() ? grads[0] : Tensor();
    detail::DropoutAddLayerNormGrads g;
    if (grads.size() > 1 && grads[1].defined()) {
      g = buffers(true);
      g.ds_extra = g_s;
      run_backward(s_, grads[1], g);
    } else {
      g.ds = g_s.defined() ? g_s : Tensor::zeros(sum.shape(), sum.dtype(), sum.device());
      if (wants(0) || wants(1)) g.dx = dropout(g.ds, s_.mask.p, s_.mask.seed, s_.mask.offset);
      if (wants(1)) g.dbias = detail::sum_to_shape(g.dx, vec);
      if (wants(3)) g.dgamma = Tensor::zeros(vec, sum.dtype(), sum.device());
      if (wants(4)) g.dbeta = Tensor::zeros(vec, sum.dtype(), sum.device());
    }
    return input_grads(g);
  }
  std::string_view name() const override { return "dropout_add_norm_pair"; }
};

}  // namespace

Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, std::uint64_t seed,
                              std::uint64_t offset, double eps) {
  return dropout_add_layer_norm(in, p, philox::SeedRef{seed, nullptr}, offset, eps);
}

Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, philox::SeedRef seed,
                              std::uint64_t offset, double eps) {
  check_inputs(in, p, eps);
  const bool grad = any_requires_grad({&in.x, &in.bias, &in.residual, &in.gamma, &in.beta});
  Tensor y = Tensor::empty_like(in.x);
  // s is kept only for the backward; without one the kernels write it into y and normalize in place.
  Saved saved = run_forward(in, p, seed, offset, eps, grad ? Tensor::empty_like(in.x) : y, y);
  if (grad)
    record(std::make_shared<DropoutAddLayerNormNode>(std::move(saved)),
           {&in.x, &in.bias, &in.residual, &in.gamma, &in.beta}, y);
  return y;
}

Tensor dropout_add_layer_norm(const DropoutAddLayerNormInputs& in, double p, Generator& generator, double eps) {
  check_inputs(in, p, eps);
  // As dropout(x, p, generator): the stream advances by x's size whatever p is.
  const Generator::Draw draw = generator.reserve(static_cast<std::uint64_t>(in.x.numel()));
  return dropout_add_layer_norm(in, p, draw.seed_on(in.x.device()), draw.offset, eps);
}

DropoutAddNormPair dropout_add_norm_pair(const DropoutAddLayerNormInputs& in, double p, std::uint64_t seed,
                                         std::uint64_t offset, double eps) {
  return dropout_add_norm_pair(in, p, philox::SeedRef{seed, nullptr}, offset, eps);
}

DropoutAddNormPair dropout_add_norm_pair(const DropoutAddLayerNormInputs& in, double p, philox::SeedRef seed,
                                         std::uint64_t offset, double eps) {
  check_inputs(in, p, eps);
  DropoutAddNormPair out{Tensor::empty_like(in.x), Tensor::empty_like(in.x)};
  Saved saved = run_forward(in, p, seed, offset, eps, out.sum, out.normed);
  if (any_requires_grad({&in.x, &in.bias, &in.residual, &in.gamma, &in.beta}))
    record(std::make_shared<DropoutAddNormPairNode>(std::move(saved)),
           {&in.x, &in.bias, &in.residual, &in.gamma, &in.beta}, {&out.sum, &out.normed});
  return out;
}

DropoutAddNormPair dropout_add_norm_pair(const DropoutAddLayerNormInputs& in, double p, Generator& generator,
                                         double eps) {
  check_inputs(in, p, eps);
  const Generator::Draw draw = generator.reserve(static_cast<std::uint64_t>(in.x.numel()));
  return dropout_add_norm_pair(in, p, draw.seed_on(in.x.device()), draw.offset, eps);
}

}  // namespace attnlab
