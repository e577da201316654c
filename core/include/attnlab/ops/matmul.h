#pragma once
// Matrix products through BLAS (OpenBLAS sgemm/dgemm on the CPU).
#include "attnlab/tensor.h"

namespace attnlab {

// op(a) @ op(b) where op transposes the last two axes when the flag is set.
// a: [..., M, K] (trans_a: [..., K, M]); b: [..., K, N] (trans_b: [..., N, K]) with the same
// leading (batch) axes as a, or b of rank 2 shared by every batch entry.
// Result: [..., M, N]. Throws an Error naming both shapes when the inner extents disagree.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// y = x W^T + bias, the layout of torch.nn.Linear: x [..., in], weight [out, in], bias [out]
// or undefined. Result [..., out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace attnlab
