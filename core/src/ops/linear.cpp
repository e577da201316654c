// linear and linear_relu, forward and backward, in the compute precision of attnlab/precision.h
// (gemm_util.h).
#include <algorithm>
#include <utility>

#include "attnlab/autograd.h"
#include "attnlab/ops/matmul.h"
#include "dispatch.h"
#include "ops/gemm_util.h"
#include "ops/linear_relu_kernels.h"
#include "ops/matmul_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

using detail::GemmMath;
using detail::GemmSpec;

// The checked operands of linear (and linear_relu, named `op` in the errors), the forward product's
// spec and the output shape.
struct LinearForm {
  GemmSpec spec;
  Shape out_shape;
};

LinearForm linear_form(std::string_view op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::check_float_operands(op, x, "x", weight, "weight");
  const Shape& sx = x.shape();
  const Shape& sw = weight.shape();
  ATTNLAB_CHECK(sw.rank() == 2, "{}: weight {} must be [out, in] (x {})", op, sw.str(), sx.str());
  ATTNLAB_CHECK(sx.rank() >= 1 && sx[-1] == sw[1],
                "{}: x {} must end with the weight's in extent {} (weight {} is [out, in])", op, sx.str(), sw[1],
                sw.str());
  if (bias.defined()) {
    detail::check_same_device(op, x, bias);
    detail::check_same_dtype(op, x, bias);
    ATTNLAB_CHECK(bias.shape() == Shape{sw[0]}, "{}: bias {} must be [out] = [{}] (weight {})", op,
                  bias.shape().str(), sw[0], sw.str());
  }
  std::vector<std::int64_t> dims = sx.dims();
  dims.back() = sw[0];
  LinearForm f;
  f.spec.op = op;
  f.spec.m = sx.outer(sx.rank() - 1), f.spec.n = sw[0], f.spec.k = sw[1];
  f.spec.trans_b = true;  // x [R, in] @ W^T [in, out]
  f.spec.math = detail::gemm_math(x.dtype());
  f.out_shape = Shape(std::move(dims));
  return f;
}

// The input gradients of y = x W^T (+ bias) with x viewed as [R, in] (R = rows), W [out, in] and
// G = dL/dy [R, out]:
//   dx = G W            [R, out] [out, in]
//   dW = G^T x          [out, R] [R, in]   (sums over the rows: one GEMM over the flat x)
//   db = sum_r G[r, :]  (by the callers: linear sums G, linear_relu fuses it with the mask)
// Holds what the two products need: x for dW, W for dx (bf16 copies under bf16 math).
class LinearGrads {
 public:
  LinearGrads(const Tensor& x, const Tensor& weight, GemmMath math)
      : x_shape_(x.shape()), w_shape_(weight.shape()), math_(math) {
    if (weight.requires_grad()) x_ = x.detach();
    if (x.requires_grad()) w_ = weight.detach();
  }
  // {dx, dW} for the output gradient g; each only when wanted.
  std::pair<Tensor, Tensor> products(const Tensor& g, bool want_x, bool want_w) const {
    const Tensor gm = detail::backward_operand(g, math_);
    const std::int64_t out = w_shape_[0], in = w_shape_[1];
    const std::int64_t rows = x_shape_.numel() / std::max<std::int64_t>(1, in);
    Tensor gx, gw;
    if (want_x) {
      GemmSpec s;
      s.op = "linear backward";
      s.math = math_;
      s.m = rows, s.n = in, s.k = out;
      gx = detail::run_gemm(s, gm, w_, x_shape_);
    }
    if (want_w) {
      GemmSpec s;
      s.op = "linear backward";
      s.math = math_;
      s.m = out, s.n = in, s.k = rows;
      s.trans_a = true;
      gw = detail::run_gemm(s, gm, x_, w_shape_);
    }
    return {gx, gw};
  }
  std::int64_t out_features() const { return w_shape_[0]; }
  void release() { x_ = w_ = Tensor(); }

 private:
  Shape x_shape_, w_shape_;
  GemmMath math_;
  Tensor x_, w_;
};

class LinearNode final : public Node {
 public:
  LinearNode(const Tensor& x, const Tensor& weight, bool has_bias, GemmMath math)
      : grads_(x, weight, math), has_bias_(has_bias) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor g = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device);
    auto [gx, gw] = grads_.products(g, next[0].node != nullptr, next[1].node != nullptr);
    // The bias gradient sums the f32 output gradient (not its bf16 copy).
    Tensor gb;
    if (has_bias_ && next[2].node) gb = detail::sum_to_shape(g, Shape{grads_.out_features()});
    return {gx, gw, gb};
  }
  void release() override { grads_.release(); }
  std::string_view name() const override { return "linear"; }

 private:
  LinearGrads grads_;
  bool has_bias_;
};

// y = relu(z), z = x W^T + bias, G = dL/dy:
//   dz = G * [z > 0] = G * [y > 0]      (y = z > 0 exactly where z > 0, and y = 0 elsewhere)
//   db = sum_r dz[r, :]                 (in the same pass over dz: relu_mask_backward)
//   dx, dW = linear's products with dz  (LinearGrads)
// So the node keeps the output y, which the next layer holds anyway, and not z (one tensor of
// y's size less). The mask [y > 0] gives 0 at z = 0, relu's convention.
class LinearReluNode final : public Node {
 public:
  LinearReluNode(const Tensor& x, const Tensor& weight, bool has_bias, GemmMath math, const Tensor& y)
      : grads_(x, weight, math), has_bias_(has_bias), y_(y.detach()) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor g = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device);
    Tensor dz = Tensor::empty_like(g);
    Tensor gb;
    if (has_bias_ && next[2].node) gb = Tensor::empty(Shape{grads_.out_features()}, g.dtype(), g.device());
    ATTNLAB_DISPATCH(g.device(), detail::relu_mask_backward, y_, g, dz, gb);
    auto [gx, gw] = grads_.products(dz, next[0].node != nullptr, next[1].node != nullptr);
    return {gx, gw, gb};
  }
  void release() override {
    grads_.release();
    y_ = Tensor();
  }
  std::string_view name() const override { return "linear_relu"; }

 private:
  LinearGrads grads_;
  bool has_bias_;
  Tensor y_;
};

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const LinearForm f = linear_form("linear", x, weight, bias);
  const Tensor x_in = detail::gemm_operand(x, f.spec.math), w_in = detail::gemm_operand(weight, f.spec.math);
  Tensor y = Tensor::empty(f.out_shape, detail::gemm_out_dtype(f.spec, x_in), x.device());
  // With a bias: y = bias broadcast, then y += x W^T (cuBLASLt's bias epilogue on CUDA).
  if (bias.defined() && y.numel() > 0)
    ATTNLAB_DISPATCH(x.device(), detail::gemm_bias, f.spec, x_in, w_in, bias, y);
  else
    ATTNLAB_DISPATCH(x.device(), detail::gemm, f.spec, x_in, w_in, y);
  if (any_requires_grad({&x_in, &w_in, &bias}))
    record(std::make_shared<LinearNode>(x_in, w_in, bias.defined(), f.spec.math), {&x_in, &w_in, &bias}, y);
  return y;
}

Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const LinearForm f = linear_form("linear_relu", x, weight, bias);
  const Tensor x_in = detail::gemm_operand(x, f.spec.math), w_in = detail::gemm_operand(weight, f.spec.math);
  Tensor y = Tensor::empty(f.out_shape, detail::gemm_out_dtype(f.spec, x_in), x.device());
  if (y.numel() > 0) ATTNLAB_DISPATCH(x.device(), detail::gemm_bias_relu, f.spec, x_in, w_in, bias, y);
  if (any_requires_grad({&x_in, &w_in, &bias})) {
    record(std::make_shared<LinearReluNode>(x_in, w_in, bias.defined(), f.spec.math, y), {&x_in, &w_in, &bias},
           y);
  }
  return y;
}

}  // namespace attnlab
