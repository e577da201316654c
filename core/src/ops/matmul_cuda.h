#pragma once
// Raw entry points of the CUDA matmul kernels (matmul_cuda.cu: cuBLAS; matmul_lt_cuda.cu:
// cuBLASLt). Plain header: device pointers and the GemmSpec only. Reach them through gemm_cuda /
// fill_rows_cuda / gemm_bias_cuda of matmul_kernels.h, which the dispatch macros call (gemm_lt
// also serves linear_relu_cuda.cu).
#include <cstdint>

#include "attnlab/dtype.h"
#include "ops/gemm_spec.h"

namespace attnlab::cuda {

// The products of `spec` (see GemmSpec) on device `device_index`; out is a device pointer of
// `out_dtype` (f32 or f64), a and b of the same dtype, or bf16 under GemmMath::bf16 (then out is
// f32, or bf16 with spec.bf16_out); all contiguous row-major. Queued on the device's context
// stream. Throws attnlab::Error on an unsupported dtype, extents beyond cuBLAS's int range, or a
// CUDA / cuBLAS failure (naming the call and file:line).
void gemm(const detail::GemmSpec& spec, DType out_dtype, int device_index, const void* a, const void* b,
          void* out);
// out (rows, cols) = row (cols) broadcast over the rows; f32 or f64.
void fill_rows(DType dtype, int device_index, const void* row, std::int64_t cols, void* out,
               std::int64_t rows);
// out (m, n) = a (m, k) b(n, k)^T + bias (n) broadcast over the rows: linear with a bias. One
// cuBLASLt matmul with the bias epilogue for f32 out (exact, tf32 or bf16 math); f64, and shapes
// cuBLASLt has no algorithm for, run fill_rows then an accumulating gemm.
void gemm_bias(const detail::GemmSpec& spec, DType out_dtype, int device_index, const void* a, const void* b,
               const void* bias, void* out);

// What cuBLASLt's epilogue does to the product D = a b^T before it is written (gemm_lt).
enum class LtEpilogue : std::uint8_t {
  bias,       // D + bias broadcast over the rows (CUBLASLT_EPILOGUE_BIAS)
  relu_bias,  // max(0, D + bias) (CUBLASLT_EPILOGUE_RELU_BIAS)
  relu,       // max(0, D), no bias (CUBLASLT_EPILOGUE_RELU)
};

// linear's product with an epilogue, as one cuBLASLt matmul (matmul_lt_cuda.cu): out (m, n) f32
// = epilogue(a (m, k) b (n, k)^T), bias (n) f32 for the bias epilogues (else ignored). The spec
// must be linear's (batch 1, trans_b only, no accumulate or reduce) with every extent positive and
// within int, and the math exact, tf32 or bf16 (then a and b are bf16). Returns false, with
// nothing queued, for any other spec and where cuBLASLt has no algorithm for the shapes, math and
// alignments: the caller then runs its fallback.
bool gemm_lt(const detail::GemmSpec& spec, LtEpilogue epilogue, int device_index, const void* a, const void* b,
             const void* bias, void* out);

}  // namespace attnlab::cuda
