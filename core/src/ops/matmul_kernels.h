#pragma once
// Backend kernels of matmul.cpp. Tensors arrive checked: same device, out allocated; a and b
// have one dtype (bf16 under GemmMath::bf16, with an f32 out, or bf16 with spec.bf16_out;
// otherwise out's dtype).
#include "attnlab/tensor.h"
#include "ops/gemm_spec.h"
#include "ops/matmul_cuda.h"

namespace attnlab::detail {

// Runs the products with oneDNN's sgemm or cblas_sgemm (f32) and cblas_dgemm (f64); bf16 operands
// go to oneDNN's bf16 matmul or are widened to f32 first (the products exact, the sums rounded in
// f32). matmul_cpu.cpp says which path takes which product.
void gemm_cpu(const GemmSpec& spec, const Tensor& a, const Tensor& b, Tensor& out);
// out viewed as [rows, row.numel()]: every row = row. Initializes a linear layer's output with
// its bias before an accumulating GEMM.
void fill_rows_cpu(const Tensor& row, Tensor& out);
// out = a op(b) + bias broadcast over the rows, for linear (batch 1, b shared, trans_b, no
// accumulate); bias has out's dtype. fill_rows then an accumulating gemm.
void gemm_bias_cpu(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& out);

// The CUDA counterparts: cuBLAS on the tensors' device (matmul_cuda.cu). They are inline
// adapters from tensors to the raw entry points of matmul_cuda.h because a .cu file cannot
// include tensor.h (nvcc does not compile fmt); a CPU-only build, whose dispatch never names
// them, emits no reference to those entry points.
inline void gemm_cuda(const GemmSpec& spec, const Tensor& a, const Tensor& b, Tensor& out) {
  cuda::gemm(spec, out.dtype(), out.device().index, a.raw_data(), b.raw_data(), out.raw_data());
}
inline void fill_rows_cuda(const Tensor& row, Tensor& out) {
  const std::int64_t cols = row.numel();
  cuda::fill_rows(out.dtype(), out.device().index, row.raw_data(), cols, out.raw_data(),
                  cols == 0 ? 0 : out.numel() / cols);
}
// cuBLASLt with the bias epilogue where it has an algorithm for the shapes (matmul_lt_cuda.cu);
// otherwise fill_rows and an accumulating gemm, as on the CPU.
inline void gemm_bias_cuda(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Tensor& bias,
                           Tensor& out) {
  cuda::gemm_bias(spec, out.dtype(), out.device().index, a.raw_data(), b.raw_data(), bias.raw_data(),
                  out.raw_data());
}

}  // namespace attnlab::detail
