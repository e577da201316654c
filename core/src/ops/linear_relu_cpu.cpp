// linear_relu's CPU kernels: compositions of linear's and relu's own kernels, so the fused op
// equals linear then relu to the bit (and a one-pass version would have to prove that it does).
#include "ops/activation_kernels.h"
#include "ops/binary_kernels.h"
#include "ops/linear_relu_kernels.h"
#include "ops/matmul_kernels.h"

namespace attnlab::detail {

void gemm_bias_relu_cpu(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& out) {
  if (bias.defined())
    gemm_bias_cpu(spec, a, b, bias, out);
  else
    gemm_cpu(spec, a, b, out);
  activation_forward_cpu(Activation::relu, out, out);  // element i reads and writes only i
}

void relu_mask_backward_cpu(const Tensor& y, const Tensor& dy, Tensor& dz, Tensor& db) {
  activation_backward_cpu(Activation::relu, y, dy, dz);
  if (db.defined()) sum_rows_cpu(dz, db);
}

}  // namespace attnlab::detail
