#pragma once
// The compute-precision plumbing shared by matmul and linear (matmul.cpp, linear.cpp): what the
// thread's precision (attnlab/precision.h) makes of a product, and one GEMM into a new tensor.
#include "attnlab/tensor.h"
#include "ops/gemm_spec.h"

namespace attnlab::detail {

// What the thread's compute precision makes of a product of `dtype` operands: only f32 is
// affected (f64 stays exact for the gradient checks).
GemmMath gemm_math(DType dtype);
// The operand as the product reads it: a bf16 copy under bf16 math (recorded, so the gradient
// returns to the f32 operand), the operand itself otherwise.
Tensor gemm_operand(const Tensor& t, GemmMath math);
// bf16 products write f32 (bf16 with spec.bf16_out); the others write the operands' dtype.
DType gemm_out_dtype(const GemmSpec& spec, const Tensor& a);
// The output gradient as a backward product reads it: bf16 under bf16 math (the saved operands
// are bf16; the product of the two bf16 factors is accumulated in f32 and comes out f32, which
// is the dtype the cast's backward hands to the f32 operand).
Tensor backward_operand(const Tensor& g, GemmMath math);
// The products of `spec` into a new tensor of `out_shape` (gemm_out_dtype) on a's device.
Tensor run_gemm(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Shape& out_shape);

}  // namespace attnlab::detail
