// matmul (batched, optional transposes, a rank-2 b shared by the batch) in the compute precision
// of attnlab/precision.h, and the precision helpers that linear.cpp shares (gemm_util.h).
#include "attnlab/ops/matmul.h"

#include "attnlab/autograd.h"
#include "attnlab/bf16_operands.h"
#include "attnlab/ops/cast.h"
#include "attnlab/precision.h"
#include "dispatch.h"
#include "ops/gemm_util.h"
#include "ops/matmul_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace detail {

GemmMath gemm_math(DType dtype) {
  if (dtype != DType::f32) return GemmMath::exact;
  switch (compute_precision()) {
    case Precision::tf32: return GemmMath::tf32;
    case Precision::bf16: return GemmMath::bf16;
    case Precision::fp32: break;
  }
  return GemmMath::exact;
}

Tensor gemm_operand(const Tensor& t, GemmMath math) {
  return math == GemmMath::bf16 && t.defined() ? bf16_operand(t) : t;
}

DType gemm_out_dtype(const GemmSpec& spec, const Tensor& a) {
  if (spec.math != GemmMath::bf16) return a.dtype();
  return spec.bf16_out ? DType::bf16 : DType::f32;
}

Tensor backward_operand(const Tensor& g, GemmMath math) {
  return math == GemmMath::bf16 ? g.to(DType::bf16) : g;
}

Tensor run_gemm(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, gemm_out_dtype(spec, a), a.device());
  ATTNLAB_DISPATCH(a.device(), detail::gemm, spec, a, b, out);
  return out;
}

}  // namespace detail

namespace {

using detail::backward_operand;
using detail::GemmSpec;
using detail::run_gemm;

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

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, bool bf16_out) {
  GemmSpec spec = matmul_spec(a, b, trans_a, trans_b);
  spec.math = detail::gemm_math(a.dtype());
  spec.bf16_out = bf16_out && spec.math == detail::GemmMath::bf16;
  const Tensor a_in = detail::gemm_operand(a, spec.math), b_in = detail::gemm_operand(b, spec.math);
  Tensor out = run_gemm(spec, a_in, b_in, matmul_shape(a.shape(), spec.m, spec.n));
  if (any_requires_grad({&a_in, &b_in}))
    record(std::make_shared<MatmulNode>(spec, a_in, b_in), {&a_in, &b_in}, out);
  return out;
}

}  // namespace attnlab
