#pragma once
// Matrix products through BLAS (OpenBLAS sgemm/dgemm on the CPU, cuBLAS / cuBLASLt on CUDA).
#include "attnlab/tensor.h"

namespace attnlab {

// op(a) @ op(b) where op transposes the last two axes when the flag is set.
// a: [..., M, K] (trans_a: [..., K, M]); b: [..., K, N] (trans_b: [..., N, K]) with the same
// leading (batch) axes as a, or b of rank 2 shared by every batch entry.
// Result: [..., M, N]. Throws an Error naming both shapes when the inner extents disagree.
// bf16_out, under bf16 precision with f32 operands: the result is bf16, each f32 sum rounded once
// to nearest even (what a bf16 matmul under PyTorch's autocast returns), half the memory of the
// f32 result for a wide one such as a model's logits [N, V] (cross_entropy reads bf16 logits).
// Its gradient comes back in bf16 and feeds the backward GEMMs as it is, where an f32 gradient
// would be cast to bf16 for them first. Elsewhere (fp32, tf32, f64 operands) it changes nothing.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false, bool bf16_out = false);

// y = x W^T + bias, the layout of torch.nn.Linear: x [..., in], weight [out, in], bias [out]
// or undefined. Result [..., out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// relu(linear(x, weight, bias)) = max(0, x W^T + bias) as one op: the first layer of the paper's
// feed-forward network. The shapes, dtypes, compute precision and errors are linear's (bf16
// precision: bf16 x and weight, f32 bias and output). On CUDA the ReLU runs in the GEMM's
// epilogue (cuBLASLt) where it can. The backward saves the output instead of the pre-activation
// (y > 0 exactly where x W^T + bias > 0); the gradient at a pre-activation of exactly 0 is 0, as
// relu's. On the CPU the values and gradients equal relu(linear(...)) to the bit.
Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace attnlab
