// matmul (batched, optional transposes, a rank-2 b shared by the batch) and linear, in the
// compute precision of attnlab/precision.h.
#include "attnlab/ops/matmul.h"

#include "attnlab/autograd.h"
#include "attnlab/ops/cast.h"
#include "attnlab/precision.h"
#include "dispatch.h"
#include "ops/matmul_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

using detail::GemmMath;
using detail::GemmSpec;

// What the thread's compute precision makes of a product of `dtype` operands: only f32 is
// affected (f64 stays exact for the gradient checks).
GemmMath gemm_math(DType dtype) {
  if (dtype != DType::f32) return GemmMath::exact;
  switch (compute_precision()) {
    case Precision::tf32: return GemmMath::tf32;
    case Precision::bf16: return GemmMath::bf16;
    case Precision::fp32: break;
  }
  return GemmMath::exact;
}

// The operand as the product reads it: a bf16 copy under bf16 math (recorded, so the gradient
// returns to the f32 operand), the operand itself otherwise.
Tensor gemm_operand(const Tensor& t, GemmMath math) {
  return math == GemmMath::bf16 && t.defined() ? cast(t, DType::bf16) : t;
}

// bf16 products write f32; the others write the operands' dtype.
DType gemm_out_dtype(const GemmSpec& spec, const Tensor& a) {
  return spec.math == GemmMath::bf16 ? DType::f32 : a.dtype();
}

Tensor run_gemm(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, gemm_out_dtype(spec, a), a.device());
  ATTNLAB_DISPATCH(a.device(), detail::gemm, spec, a, b, out);
  return out;
}

// The output gradient as a backward product reads it: bf16 under bf16 math (the saved operands
// are bf16; the product of the two bf16 factors is accumulated in f32 and comes out f32, which
// is the dtype the cast's backward hands to the f32 operand).
Tensor backward_operand(const Tensor& g, GemmMath math) {
  return math == GemmMath::bf16 ? g.to(DType::bf16) : g;
}

std::string flags(bool trans_a, bool trans_b) {
  return fmt::format("trans_a = {}, trans_b = {}", trans_a, trans_b);
}

// Validates the operands and returns the forward product's spec.
GemmSpec matmul_spec(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  detail::check_float_operands("matmul", a, "a", b, "b");
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  ATTNLAB_CHECK(sa.rank() >= 2 && sb.rank() >= 2,
                "matmul: a {} and b {} must both have rank >= 2 (matrices, optionally batched)",
                sa.str(), sb.str());
  GemmSpec s;
  s.op = "matmul";
  s.trans_a = trans_a;
  s.trans_b = trans_b;
  s.m = trans_a ? sa[-1] : sa[-2];
  s.k = trans_a ? sa[-2] : sa[-1];
  const std::int64_t kb = trans_b ? sb[-1] : sb[-2];
  s.n = trans_b ? sb[-2] : sb[-1];
  ATTNLAB_CHECK(s.k == kb, "matmul: inner extents differ ({} vs {}) for a {} and b {} ({})", s.k,
                kb, sa.str(), sb.str(), flags(trans_a, trans_b));
  s.b_shared = sb.rank() == 2;
  if (!s.b_shared) {
    bool same_batch = sa.rank() == sb.rank();
    for (int i = 0; same_batch && i < sa.rank() - 2; ++i) same_batch = sa[i] == sb[i];
    ATTNLAB_CHECK(same_batch,
                  "matmul: batch axes differ for a {} and b {} (b must have a's leading axes or "
                  "rank 2)",
                  sa.str(), sb.str());
  }
  s.batch = sa.outer(sa.rank() - 2);
  return s;
}

Shape matmul_shape(const Shape& sa, std::int64_t m, std::int64_t n) {
  std::vector<std::int64_t> dims = sa.dims();
  dims[dims.size() - 2] = m;
  dims[dims.size() - 1] = n;
  return Shape(std::move(dims));
}

// C = op(A) op(B) per batch entry, with G = dL/dC:
//   d op(A) = G op(B)^T  and  d op(B) = op(A)^T G.
// Undoing the transposes of the stored operands:
//   dA = G op(B)^T           (A stored as op(A))     dA = op(B) G^T   (trans_a: A = op(A)^T)
//   dB = op(A)^T G           (B stored as op(B))     dB = G^T op(A)   (trans_b: B = op(B)^T)
// Each is one more batched GEMM with transpose flags instead of materialized transposes. A
// rank-2 B shared by the batch receives the sum of the per-entry gradients (spec.reduce); when
// it appears as the left factor (dA with trans_a) it is a shared left operand.
class MatmulNode final : public Node {
 public:
  MatmulNode(const GemmSpec& spec, const Tensor& a, const Tensor& b)
      : spec_(spec), a_shape_(a.shape()), b_shape_(b.shape()) {
    if (b.requires_grad()) a_ = a.detach();  // dB needs A
    if (a.requires_grad()) b_ = b.detach();  // dA needs B
  }
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const GemmSpec& f = spec_;
    const Tensor g = backward_operand(
        detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device), f.math);
    Tensor ga, gb;
    if (next[0].node) {
      GemmSpec s;
      s.op = "matmul backward";
      s.math = f.math;
      s.batch = f.batch;
      if (!f.trans_a) {  // dA [M, K] = G [M, N] op(B)^T [N, K]
        s.m = f.m, s.n = f.k, s.k = f.n;
        s.trans_a = false, s.trans_b = !f.trans_b, s.b_shared = f.b_shared;
        ga = run_gemm(s, g, b_, a_shape_);
      } else {  // dA [K, M] = op(B) [K, N] G^T [N, M]
        s.m = f.k, s.n = f.m, s.k = f.n;
        s.trans_a = f.trans_b, s.trans_b = true, s.a_shared = f.b_shared;
        ga = run_gemm(s, b_, g, a_shape_);
      }
    }
    if (next[1].node) {
      GemmSpec s;
      s.op = "matmul backward";
      s.math = f.math;
      s.batch = f.batch;
      s.reduce = f.b_shared;
      if (!f.trans_b) {  // dB [K, N] = op(A)^T [K, M] G [M, N]
        s.m = f.k, s.n = f.n, s.k = f.m;
        s.trans_a = !f.trans_a, s.trans_b = false;
        gb = run_gemm(s, a_, g, b_shape_);
      } else {  // dB [N, K] = G^T [N, M] op(A) [M, K]
        s.m = f.n, s.n = f.k, s.k = f.m;
        s.trans_a = true, s.trans_b = f.trans_a;
        gb = run_gemm(s, g, a_, b_shape_);
      }
    }
    return {ga, gb};
  }
  void release() override { a_ = b_ = Tensor(); }
  std::string_view name() const override { return "matmul"; }

 private:
  GemmSpec spec_;
  Shape a_shape_, b_shape_;
  Tensor a_, b_;
};

// y = x W^T + bias with x viewed as [R, in] (R = rows), W [out, in], G = dL/dy [R, out]:
//   dx = G W            [R, out] [out, in]
//   dW = G^T x          [out, R] [R, in]   (sums over the rows: one GEMM over the flat x)
//   db = sum_r G[r, :]
class LinearNode final : public Node {
 public:
  LinearNode(const Tensor& x, const Tensor& weight, bool has_bias, GemmMath math)
      : x_shape_(x.shape()), w_shape_(weight.shape()), has_bias_(has_bias), math_(math) {
    if (weight.requires_grad()) x_ = x.detach();
    if (x.requires_grad()) w_ = weight.detach();
  }
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor g = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device);
    const Tensor gm = backward_operand(g, math_);
    const std::int64_t out = w_shape_[0], in = w_shape_[1];
    const std::int64_t rows = x_shape_.numel() / std::max<std::int64_t>(1, in);
    Tensor gx, gw, gb;
    if (next[0].node) {
      GemmSpec s;
      s.op = "linear backward";
      s.math = math_;
      s.m = rows, s.n = in, s.k = out;
      gx = run_gemm(s, gm, w_, x_shape_);
    }
    if (next[1].node) {
      GemmSpec s;
      s.op = "linear backward";
      s.math = math_;
      s.m = out, s.n = in, s.k = rows;
      s.trans_a = true;
      gw = run_gemm(s, gm, x_, w_shape_);
    }
    // The bias gradient sums the f32 output gradient (not its bf16 copy).
    if (has_bias_ && next[2].node) gb = detail::sum_to_shape(g, Shape{out});
    return {gx, gw, gb};
  }
  void release() override { x_ = w_ = Tensor(); }
  std::string_view name() const override { return "linear"; }

 private:
  Shape x_shape_, w_shape_;
  bool has_bias_;
  GemmMath math_;
  Tensor x_, w_;
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  GemmSpec spec = matmul_spec(a, b, trans_a, trans_b);
  spec.math = gemm_math(a.dtype());
  const Tensor a_in = gemm_operand(a, spec.math), b_in = gemm_operand(b, spec.math);
  Tensor out = run_gemm(spec, a_in, b_in, matmul_shape(a.shape(), spec.m, spec.n));
  if (any_requires_grad({&a_in, &b_in}))
    record(std::make_shared<MatmulNode>(spec, a_in, b_in), {&a_in, &b_in}, out);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::check_float_operands("linear", x, "x", weight, "weight");
  const Shape& sx = x.shape();
  const Shape& sw = weight.shape();
  ATTNLAB_CHECK(sw.rank() == 2, "linear: weight {} must be [out, in] (x {})", sw.str(), sx.str());
  ATTNLAB_CHECK(sx.rank() >= 1 && sx[-1] == sw[1],
                "linear: x {} must end with the weight's in extent {} (weight {} is [out, in])",
                sx.str(), sw[1], sw.str());
  const bool has_bias = bias.defined();
  if (has_bias) {
    detail::check_same_device("linear", x, bias);
    detail::check_same_dtype("linear", x, bias);
    ATTNLAB_CHECK(bias.shape() == Shape{sw[0]}, "linear: bias {} must be [out] = [{}] (weight {})",
                  bias.shape().str(), sw[0], sw.str());
  }
  const std::int64_t out_features = sw[0], in_features = sw[1];
  std::vector<std::int64_t> dims = sx.dims();
  dims.back() = out_features;

  GemmSpec s;
  s.op = "linear";
  s.m = sx.outer(sx.rank() - 1), s.n = out_features, s.k = in_features;
  s.trans_b = true;  // x [R, in] @ W^T [in, out]
  s.math = gemm_math(x.dtype());
  const Tensor x_in = gemm_operand(x, s.math), w_in = gemm_operand(weight, s.math);
  Tensor y = Tensor::empty(Shape(std::move(dims)), gemm_out_dtype(s, x_in), x.device());
  // With a bias: y = bias broadcast, then y += x W^T (cuBLASLt's bias epilogue on CUDA).
  if (has_bias && y.numel() > 0)
    ATTNLAB_DISPATCH(x.device(), detail::gemm_bias, s, x_in, w_in, bias, y);
  else
    ATTNLAB_DISPATCH(x.device(), detail::gemm, s, x_in, w_in, y);

  if (any_requires_grad({&x_in, &w_in, &bias})) {
    record(std::make_shared<LinearNode>(x_in, w_in, has_bias, s.math), {&x_in, &w_in, &bias}, y);
  }
  return y;
}

}  // namespace attnlab
