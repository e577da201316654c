#pragma once
// Raw-pointer launchers of the element-wise CUDA kernels (binary, activation, dropout, adam,
// embedding). The Tensor-level <fn>_cuda functions of ops/*_kernels.h unpack their tensors and
// call these (ops/elementwise_cuda.cpp); this header stays free of fmt so that nvcc reads it.
// Pointers are device pointers on the current device; every launch is asynchronous on `stream`.
#include <cstdint>

#include <cuda_runtime.h>

#include "attnlab/dtype.h"
#include "attnlab/philox.h"
#include "ops/adam_scalars.h"

namespace attnlab::cuda {

// The current device for the launches that follow.
void set_device(int index);

// op: 0 add, 1 sub, 2 mul (detail::BinaryOp). out[i] = a[i % na] op b[i % nb], n a multiple of both.
void binary_forward(int op, DType dtype, const void* a, std::int64_t na, const void* b, std::int64_t nb,
                    void* out, std::int64_t n, cudaStream_t stream);
void scale_forward(DType dtype, const void* x, double factor, void* out, std::int64_t n, cudaStream_t stream);
void add_inplace(DType dtype, void* dst, const void* src, std::int64_t n, cudaStream_t stream);
// in [rows, cols] -> out [cols]: column sums, deterministic (cuda/column_sums.cuh).
void sum_rows(DType dtype, const void* in, std::int64_t rows, std::int64_t cols, void* out, cudaStream_t stream);

// kind: detail::Activation as int (relu, gelu, tanh, silu).
void activation_forward(int kind, DType dtype, const void* x, void* y, std::int64_t n, cudaStream_t stream);
void activation_backward(int kind, DType dtype, const void* x, const void* dy, void* dx, std::int64_t n,
                         cudaStream_t stream);

// out[i] = philox::uniform(seed, offset, i) >= p ? in[i] / (1 - p) : 0, the seed read by the
// kernel (from device memory when it names a slot).
void dropout_apply(DType dtype, const void* in, void* out, std::int64_t n, double p, philox::SeedRef seed,
                   std::uint64_t offset, cudaStream_t stream);

// Fused Adam (with AdamW's decay and the gradient scale) from the scalars of ops/adam_scalars.h,
// as adam_cpu.cpp computes it.
void adam_update(DType dtype, void* param, const void* grad, void* m, void* v, std::int64_t n,
                 const detail::AdamStepScalars& h, cudaStream_t stream);

// ids_dtype i32 or i64. out [n, d] = weight[ids[n], :] for ids in [0, vocab); an id outside is
// recorded in `check` (an index-check word, index_check.h; null: none) and its row is NaN.
void embedding_forward(DType dtype, const void* weight, DType ids_dtype, const void* ids, std::int64_t n,
                       std::int64_t vocab, std::int64_t d, std::uint64_t* check, void* out, cudaStream_t stream);
// dweight [vocab, d] = sum over positions of dout rows, ids outside [0, vocab) left out;
// deterministic, in the CPU's order, without host copies (see embedding_cuda_kernels.cuh).
void embedding_backward(DType dtype, const void* dout, DType ids_dtype, const void* ids, std::int64_t n,
                        std::int64_t vocab, std::int64_t d, void* dweight, cudaStream_t stream);

}  // namespace attnlab::cuda
