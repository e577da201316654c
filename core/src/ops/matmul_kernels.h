#pragma once
// Backend kernels of matmul.cpp. Tensors arrive checked: same dtype and device, out allocated.
#include "attnlab/tensor.h"
#include "ops/gemm_spec.h"
#include "ops/matmul_cuda.h"

namespace attnlab::detail {

// Runs the products with cblas_sgemm / cblas_dgemm (f32, f64).
void gemm_cpu(const GemmSpec& spec, const Tensor& a, const Tensor& b, Tensor& out);
// out viewed as [rows, row.numel()]: every row = row. Initializes a linear layer's output with
// its bias before an accumulating GEMM.
void fill_rows_cpu(const Tensor& row, Tensor& out);

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

}  // namespace attnlab::detail
