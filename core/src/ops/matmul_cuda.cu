// GEMM kernels on CUDA devices: cublasGemmStridedBatchedEx (the one translation unit that calls
// cuBLAS's GEMMs; cuBLASLt's epilogues are in matmul_lt_cuda.cu), and the bias broadcast of
// linear.
//
// Row-major through column-major cuBLAS: a row-major r x c buffer, read column-major, is its
// c x r transpose. So C = op(A) op(B) (row-major, m x n) is computed as the column-major product
//   C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m),
// that is cuBLAS gets B first and A second, with the same transpose flags and the row-major
// leading dimensions (the stored row length of each operand), and no data is moved.
//
// Element and compute types by GemmMath (gemm_spec.h):
//   f64 exact    CUDA_R_64F operands and out, CUBLAS_COMPUTE_64F
//   f32 exact    CUDA_R_32F, CUBLAS_COMPUTE_32F (no tensor cores: the handle's math mode is
//                CUBLAS_DEFAULT_MATH, see cuda/context.cu)
//   f32 tf32     CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores, TF32 inputs)
//   bf16         CUDA_R_16BF operands, CUDA_R_32F out, CUBLAS_COMPUTE_32F (tensor cores, f32
//                accumulation); with bf16_out a CUDA_R_16BF out (the f32 sums rounded once)
//
// Untested on a GPU so far (written on a machine without one); tests/cuda checks it against
// the CPU kernels wherever a device is visible.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "cuda/check.cuh"
#include "cuda/context.h"
#include "ops/matmul_cuda.h"

namespace attnlab::cuda {
namespace {

using detail::GemmMath;
using detail::GemmSpec;

constexpr std::int64_t kIntMax = INT_MAX;

bool fits_int(std::int64_t v) { return v <= kIntMax; }

[[noreturn]] void fail_dtype(std::string_view op, DType dtype) {
  throw_message(std::string(op) + ": the CUDA kernel supports f32 and f64 (and bf16 operands with an f32 "
                "or bf16 output under bf16 precision), got an output of " + std::string(dtype_name(dtype)));
}

// The cuBLAS types of one spec.
struct GemmTypes {
  cudaDataType_t ab;            // a and b elements
  cudaDataType_t c;             // out elements
  cublasComputeType_t compute;
  std::size_t ab_size, c_size;  // bytes per element
  bool f64;                     // alpha and beta are double (else float)
};

GemmTypes types_for(const GemmSpec& s, DType out_dtype) {
  if (out_dtype == DType::f64) {
    if (s.math != GemmMath::exact) throw_message(std::string(s.op) + ": f64 products have no reduced-precision math");
    return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 8, 8, true};
  }
  if (s.bf16_out) {
    if (s.math != GemmMath::bf16 || out_dtype != DType::bf16 || s.accumulate || s.reduce)
      throw_message(std::string(s.op) + ": a bf16 output needs bf16 math and neither accumulate nor reduce");
    return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, false};
  }
  if (out_dtype != DType::f32) fail_dtype(s.op, out_dtype);
  switch (s.math) {
    case GemmMath::exact: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, false};
    case GemmMath::tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, false};
    case GemmMath::bf16: return {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 4, false};
  }
  fail_dtype(s.op, out_dtype);
}

// One strided batch of products c[i] = op(a[i]) op(b[i]) (+ c[i] when accumulate), all row-major:
//   a: (count, m, k), or (count, k, m) with ta; entries stride_a elements apart (0: shared)
//   b: (count, k, n), or (count, n, k) with tb; entries stride_b elements apart (0: shared)
//   c: (count, m, n), entries m * n apart (never shared: cuBLAS may run entries concurrently)
// m, n, k, count fit in int (checked by the caller).
void gemm_strided(const GemmTypes& t, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                  const void* a, std::int64_t stride_a, const void* b, std::int64_t stride_b, bool accumulate,
                  void* c, std::int64_t count, cublasHandle_t handle) {
  const int lda = static_cast<int>(std::max<std::int64_t>(1, ta ? m : k));
  const int ldb = static_cast<int>(std::max<std::int64_t>(1, tb ? k : n));
  const int ldc = static_cast<int>(std::max<std::int64_t>(1, n));
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto cm = static_cast<int>(n), cn = static_cast<int>(m), ck = static_cast<int>(k);
  const auto batch = static_cast<int>(count);
  const long long sa = stride_a, sb = stride_b, sc = m * n;
  // alpha = 1, beta = 0 or 1, in the compute type's scalar type (host pointers).
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const void* alpha = t.f64 ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* beta = t.f64 ? static_cast<const void*>(accumulate ? &one_d : &zero_d)
                           : static_cast<const void*>(accumulate ? &one_f : &zero_f);
  // Column-major C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m).
  ATTNLAB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, op_b, op_a, cm, cn, ck, alpha, b, t.ab, ldb, sb, a,
                                                  t.ab, lda, sa, beta, c, t.c, ldc, sc, batch, t.compute,
                                                  CUBLAS_GEMM_DEFAULT));
}

void gemm_all(const GemmSpec& s, const GemmTypes& t, const char* a, const char* b, char* c, const Context& ctx) {
  cublasHandle_t handle = ctx.cublas();
  const std::int64_t a_stride = s.a_shared ? 0 : s.m * s.k;  // elements
  const std::int64_t b_stride = s.b_shared ? 0 : s.k * s.n;
  const auto a_at = [&](std::int64_t i) { return a + static_cast<std::size_t>(i * a_stride) * t.ab_size; };
  const auto b_at = [&](std::int64_t i) { return b + static_cast<std::size_t>(i * b_stride) * t.ab_size; };

  if (s.k == 0) {  // empty sums: the products are zero
    if (!s.accumulate) {
      const auto bytes = static_cast<std::size_t>((s.reduce ? 1 : s.batch) * s.m * s.n) * t.c_size;
      ATTNLAB_CUDA_CHECK(cudaMemsetAsync(c, 0, bytes, ctx.stream()));
    }
    return;
  }

  if (!s.reduce) {
    // A shared, untransposed b against a batch of untransposed a: the stacked a matrices are one
    // [batch * m, k] matrix, so the whole batch is one GEMM (the linear-layer case).
    if (s.b_shared && !s.a_shared && !s.trans_a && s.batch > 1 && fits_int(s.batch * s.m)) {
      gemm_strided(t, false, s.trans_b, s.batch * s.m, s.n, s.k, a, 0, b, 0, s.accumulate, c, 1, handle);
      return;
    }
    // Otherwise one strided-batched call (a shared operand has stride 0), in chunks of at most
    // INT_MAX entries.
    for (std::int64_t first = 0; first < s.batch; first += kIntMax) {
      const std::int64_t count = std::min(kIntMax, s.batch - first);
      gemm_strided(t, s.trans_a, s.trans_b, s.m, s.n, s.k, a_at(first), a_stride, b_at(first), b_stride,
                   s.accumulate, c + static_cast<std::size_t>(first * s.m * s.n) * t.c_size, count, handle);
    }
    return;
  }

  // reduce: c = sum_i op(a[i]) op(b[i]). With a transposed and b not, the sum over the batch is
  // one product over a longer inner axis: [a[0]; a[1]; ...]^T [b[0]; b[1]; ...], and the stacked
  // matrices are the flat buffers (the weight gradient of a linear layer).
  if (s.batch == 1 ||
      (s.trans_a && !s.trans_b && !s.a_shared && !s.b_shared && fits_int(s.batch * s.k))) {
    gemm_strided(t, s.trans_a, s.trans_b, s.m, s.n, s.batch * s.k, a, 0, b, 0, s.accumulate, c, 1, handle);
    return;
  }
  // Otherwise accumulate one product after the other into c (beta = 1 after the first); the
  // calls are ordered on the context's stream.
  for (std::int64_t i = 0; i < s.batch; ++i)
    gemm_strided(t, s.trans_a, s.trans_b, s.m, s.n, s.k, a_at(i), 0, b_at(i), 0, i == 0 ? s.accumulate : true, c,
                 1, handle);
}

// out[r, j] = row[j] for r < rows (grid-stride over the n = rows * cols elements).
template <typename T>
__global__ void fill_rows_kernel(const T* row,         // (cols)
                                 std::int64_t cols,
                                 T* out,               // (rows, cols)
                                 std::int64_t n) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += step)
    out[i] = row[i % cols];
}

template <typename T>
void launch_fill_rows(const T* row, std::int64_t cols, T* out, std::int64_t rows,
                      cudaStream_t stream) {
  const std::int64_t n = rows * cols;
  if (n == 0) return;
  const int threads = 256;
  const auto blocks =
      static_cast<unsigned>(std::min<std::int64_t>((n + threads - 1) / threads, 1 << 20));
  fill_rows_kernel<T><<<blocks, threads, 0, stream>>>(row, cols, out, n);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gemm(const GemmSpec& spec, DType out_dtype, int device_index, const void* a, const void* b, void* out) {
  const GemmTypes types = types_for(spec, out_dtype);
  const Context& ctx = Context::get(device_index);
  ctx.make_current();
  if (spec.m == 0 || spec.n == 0 || spec.batch == 0) {
    if (spec.reduce && !spec.accumulate && spec.m * spec.n > 0) {  // a sum over nothing
      const auto bytes = static_cast<std::size_t>(spec.m * spec.n) * types.c_size;
      ATTNLAB_CUDA_CHECK(cudaMemsetAsync(out, 0, bytes, ctx.stream()));
    }
    return;
  }
  if (!fits_int(spec.m) || !fits_int(spec.n) || !fits_int(spec.k))
    throw_message(std::string(spec.op) + ": extents m = " + std::to_string(spec.m) +
                  ", n = " + std::to_string(spec.n) + ", k = " + std::to_string(spec.k) +
                  " exceed the cuBLAS integer range");
  gemm_all(spec, types, static_cast<const char*>(a), static_cast<const char*>(b), static_cast<char*>(out), ctx);
}

void gemm_bias(const GemmSpec& spec, DType out_dtype, int device_index, const void* a, const void* b,
               const void* bias, void* out) {
  // One cuBLASLt matmul with the bias epilogue where it applies (linear's shape, f32 out, an
  // algorithm for the shapes: gemm_lt says), else the bias broadcast and an accumulating GEMM.
  if (out_dtype == DType::f32 && gemm_lt(spec, LtEpilogue::bias, device_index, a, b, bias, out)) return;
  fill_rows(out_dtype, device_index, bias, spec.n, out, spec.batch * spec.m);
  GemmSpec s = spec;
  s.accumulate = true;
  gemm(s, out_dtype, device_index, a, b, out);
}

void fill_rows(DType dtype, int device_index, const void* row, std::int64_t cols, void* out,
               std::int64_t rows) {
  const Context& ctx = Context::get(device_index);
  ctx.make_current();
  switch (dtype) {
    case DType::f32:
      launch_fill_rows<float>(static_cast<const float*>(row), cols, static_cast<float*>(out), rows,
                              ctx.stream());
      break;
    case DType::f64:
      launch_fill_rows<double>(static_cast<const double*>(row), cols, static_cast<double*>(out),
                               rows, ctx.stream());
      break;
    default: fail_dtype("fill_rows", dtype);
  }
}

}  // namespace attnlab::cuda
