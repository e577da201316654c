#pragma once
// Backend kernels of linear_relu (linear.cpp). Tensors arrive checked, as for matmul_kernels.h; an
// undefined bias / db means none.
#include "attnlab/tensor.h"
#include "ops/gemm_spec.h"
#include "ops/linear_relu_cuda.h"

namespace attnlab::detail {

// out = relu(a b^T + bias) for linear's spec (batch 1, trans_b); out has the product's output
// dtype (f32 under bf16 math), the bias that dtype too. On the CPU: gemm_bias_cpu (or gemm_cpu
// without a bias), then relu in place, so that the values are relu(linear(...))'s to the bit.
void gemm_bias_relu_cpu(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& out);
// y, dy, dz of one shape [..., cols], db [cols] or undefined:
//   dz = dy * [y > 0]   and   db = sum over the rows of dz.
// On the CPU: relu's backward kernel (with y for the input: [y > 0] = [z > 0]) and linear's
// column sum (sum_rows), so that the gradients are relu then linear's to the bit.
void relu_mask_backward_cpu(const Tensor& y, const Tensor& dy, Tensor& dz, Tensor& db);

// The CUDA counterparts (linear_relu_cuda.cu), inline adapters to the raw entry points of
// linear_relu_cuda.h as in matmul_kernels.h.
inline void gemm_bias_relu_cuda(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Tensor& bias,
                                Tensor& out) {
  cuda::gemm_bias_relu(spec, out.dtype(), out.device().index, a.raw_data(), b.raw_data(),
                       bias.defined() ? bias.raw_data() : nullptr, out.raw_data());
}
inline void relu_mask_backward_cuda(const Tensor& y, const Tensor& dy, Tensor& dz, Tensor& db) {
  const std::int64_t cols = y.rank() == 0 ? 1 : y.dim(-1);
  const std::int64_t rows = cols == 0 ? 0 : y.numel() / cols;
  cuda::relu_mask_backward(y.dtype(), y.device().index, y.raw_data(), dy.raw_data(), rows, cols, dz.raw_data(),
                           db.defined() ? db.raw_data() : nullptr);
}

}  // namespace attnlab::detail
