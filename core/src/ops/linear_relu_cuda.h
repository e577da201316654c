#pragma once
// Raw entry points of linear_relu's CUDA kernels (linear_relu_cuda.cu). Plain header: device
// pointers and the GemmSpec only. Reach them through gemm_bias_relu_cuda / relu_mask_backward_cuda
// of linear_relu_kernels.h, which the dispatch macros call.
#include <cstdint>

#include "attnlab/dtype.h"
#include "ops/gemm_spec.h"

namespace attnlab::cuda {

// out (m, n) = max(0, a (m, k) b(n, k)^T + bias (n)); bias may be null (no bias). Types as
// gemm_bias (matmul_cuda.h). One cuBLASLt matmul with the RELU_BIAS (or RELU) epilogue for an f32
// out where cuBLASLt has an algorithm; otherwise gemm_bias (or gemm) and the relu kernel in place.
// Queued on the device's context stream.
void gemm_bias_relu(const detail::GemmSpec& spec, DType out_dtype, int device_index, const void* a, const void* b,
                    const void* bias, void* out);
// dz (rows, cols) = dy * [y > 0], and, when db is not null, db (cols) = the column sums of dz (in
// a fixed order: deterministic). y, dy, dz, db of `dtype` (f32, f64, bf16 computed in f32).
void relu_mask_backward(DType dtype, int device_index, const void* y, const void* dy, std::int64_t rows,
                        std::int64_t cols, void* dz, void* db);

}  // namespace attnlab::cuda
