#pragma once
// The description of a batch of GEMMs shared by the matmul kernels of every device. A plain
// header (no fmt, no tensors), so that the .cu files can include it.
#include <cstdint>
#include <string_view>

namespace attnlab::detail {

// How the products are computed (attnlab/precision.h):
//   exact  in the operands' dtype (f32 or f64), out the same dtype;
//   tf32   f32 operands and out; CUDA rounds the inputs to TF32 on tensor cores, the CPU is exact;
//   bf16   bf16 operands, f32 out (bf16 with bf16_out), f32 accumulation (the CPU widens the
//          operands to f32 where it has no bf16 GEMM).
enum class GemmMath : std::uint8_t { exact, tf32, bf16 };

// A batch of products out[i] = op(a[i]) @ op(b[i]), each op(a[i]) m x k and op(b[i]) k x n,
// every matrix stored row-major and contiguous; a transposed operand is stored the other way
// round (trans_a: a[i] is k x m). The tensors' shapes are not read: only their elements.
struct GemmSpec {
  std::string_view op = "matmul";  // named in errors
  std::int64_t batch = 1;
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  // One matrix used by every product of the batch (a rank-2 operand).
  bool a_shared = false, b_shared = false;
  // out is a single m x n matrix holding the sum over the batch of the products (the gradient
  // of a shared operand).
  bool reduce = false;
  // out += ... instead of out = ... (BLAS beta = 1), e.g. on top of a broadcast bias.
  bool accumulate = false;
  GemmMath math = GemmMath::exact;
  // bf16 math only: out is bf16, each f32 sum rounded once to nearest even (matmul's bf16_out),
  // for a product without accumulate or reduce.
  bool bf16_out = false;
};

}  // namespace attnlab::detail
