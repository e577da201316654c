#pragma once
// Raw entry points of the CUDA matmul kernels (matmul_cuda.cu, cuBLAS). Plain header: device
// pointers and the GemmSpec only. Reach them through gemm_cuda / fill_rows_cuda of
// matmul_kernels.h, which the dispatch macros call.
#include <cstdint>

#include "attnlab/dtype.h"
#include "ops/gemm_spec.h"

namespace attnlab::cuda {

// The products of `spec` (see GemmSpec) on device `device_index`; a, b, out are device pointers
// of `dtype` (f32 or f64; anything else throws), contiguous row-major. Queued on the device's
// context stream. Throws attnlab::Error on an unsupported dtype, extents beyond cuBLAS's int
// range, or a CUDA / cuBLAS failure (naming the call and file:line).
void gemm(const detail::GemmSpec& spec, DType dtype, int device_index, const void* a,
          const void* b, void* out);
// out (rows, cols) = row (cols) broadcast over the rows; f32 or f64.
void fill_rows(DType dtype, int device_index, const void* row, std::int64_t cols, void* out,
               std::int64_t rows);

}  // namespace attnlab::cuda
