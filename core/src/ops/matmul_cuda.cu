// GEMM kernels on CUDA devices: cublasSgemmStridedBatched / cublasDgemmStridedBatched (the one
// translation unit that calls cuBLAS's GEMMs), and the bias broadcast of linear.
//
// Row-major through column-major cuBLAS: a row-major r x c buffer, read column-major, is its
// c x r transpose. So C = op(A) op(B) (row-major, m x n) is computed as the column-major product
//   C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m),
// that is cuBLAS gets B first and A second, with the same transpose flags and the row-major
// leading dimensions (the stored row length of each operand), and no data is moved.
//
// Untested on a GPU so far (written on a machine without one); tests/cuda checks it against
// the CPU kernels wherever a device is visible.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda/check.cuh"
#include "cuda/context.h"
#include "ops/matmul_cuda.h"

namespace attnlab::cuda {
namespace {

using detail::GemmSpec;

constexpr std::int64_t kIntMax = INT_MAX;

bool fits_int(std::int64_t v) { return v <= kIntMax; }

// One strided batch of products c[i] = op(a[i]) op(b[i]) + beta c[i], all row-major:
//   a: (count, m, k), or (count, k, m) with ta; entries stride_a elements apart (0: shared)
//   b: (count, k, n), or (count, n, k) with tb; entries stride_b elements apart (0: shared)
//   c: (count, m, n), entries m * n apart (never shared: cuBLAS may run entries concurrently)
// m, n, k, count fit in int (checked by the caller).
template <typename T>
void gemm_strided(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t stride_a, const T* b, std::int64_t stride_b, T beta, T* c,
                  std::int64_t count, cublasHandle_t handle) {
  const int lda = static_cast<int>(std::max<std::int64_t>(1, ta ? m : k));
  const int ldb = static_cast<int>(std::max<std::int64_t>(1, tb ? k : n));
  const int ldc = static_cast<int>(std::max<std::int64_t>(1, n));
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto cm = static_cast<int>(n), cn = static_cast<int>(m), ck = static_cast<int>(k);
  const auto batch = static_cast<int>(count);
  const long long sa = stride_a, sb = stride_b, sc = m * n;
  const T alpha = T(1);
  // Column-major C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m).
  if constexpr (std::is_same_v<T, float>) {
    ATTNLAB_CUBLAS_CHECK(cublasSgemmStridedBatched(handle, op_b, op_a, cm, cn, ck, &alpha, b, ldb,
                                                   sb, a, lda, sa, &beta, c, ldc, sc, batch));
  } else {
    ATTNLAB_CUBLAS_CHECK(cublasDgemmStridedBatched(handle, op_b, op_a, cm, cn, ck, &alpha, b, ldb,
                                                   sb, a, lda, sa, &beta, c, ldc, sc, batch));
  }
}

template <typename T>
void gemm_typed(const GemmSpec& s, const T* a, const T* b, T* c, const Context& ctx) {
  cublasHandle_t handle = ctx.cublas();
  const std::int64_t a_stride = s.a_shared ? 0 : s.m * s.k;
  const std::int64_t b_stride = s.b_shared ? 0 : s.k * s.n;
  const T beta = s.accumulate ? T(1) : T(0);

  if (s.k == 0) {  // empty sums: the products are zero
    if (!s.accumulate) {
      const auto bytes = static_cast<std::size_t>((s.reduce ? 1 : s.batch) * s.m * s.n) * sizeof(T);
      ATTNLAB_CUDA_CHECK(cudaMemsetAsync(c, 0, bytes, ctx.stream()));
    }
    return;
  }

  if (!s.reduce) {
    // A shared, untransposed b against a batch of untransposed a: the stacked a matrices are one
    // [batch * m, k] matrix, so the whole batch is one GEMM (the linear-layer case).
    if (s.b_shared && !s.a_shared && !s.trans_a && s.batch > 1 && fits_int(s.batch * s.m)) {
      gemm_strided<T>(false, s.trans_b, s.batch * s.m, s.n, s.k, a, 0, b, 0, beta, c, 1, handle);
      return;
    }
    // Otherwise one strided-batched call (a shared operand has stride 0), in chunks of at most
    // INT_MAX entries.
    for (std::int64_t first = 0; first < s.batch; first += kIntMax) {
      const std::int64_t count = std::min(kIntMax, s.batch - first);
      gemm_strided<T>(s.trans_a, s.trans_b, s.m, s.n, s.k, a + first * a_stride, a_stride,
                      b + first * b_stride, b_stride, beta, c + first * s.m * s.n, count, handle);
    }
    return;
  }

  // reduce: c = sum_i op(a[i]) op(b[i]). With a transposed and b not, the sum over the batch is
  // one product over a longer inner axis: [a[0]; a[1]; ...]^T [b[0]; b[1]; ...], and the stacked
  // matrices are the flat buffers (the weight gradient of a linear layer).
  if (s.batch == 1 ||
      (s.trans_a && !s.trans_b && !s.a_shared && !s.b_shared && fits_int(s.batch * s.k))) {
    gemm_strided<T>(s.trans_a, s.trans_b, s.m, s.n, s.batch * s.k, a, 0, b, 0, beta, c, 1, handle);
    return;
  }
  // Otherwise accumulate one product after the other into c (beta = 1 after the first); the
  // calls are ordered on the context's stream.
  for (std::int64_t i = 0; i < s.batch; ++i) {
    gemm_strided<T>(s.trans_a, s.trans_b, s.m, s.n, s.k, a + i * a_stride, 0, b + i * b_stride, 0,
                    i == 0 ? beta : T(1), c, 1, handle);
  }
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

[[noreturn]] void fail_dtype(std::string_view op, DType dtype) {
  throw_message(std::string(op) + ": the CUDA kernel supports f32 and f64, got " +
                std::string(dtype_name(dtype)));
}

}  // namespace

void gemm(const GemmSpec& spec, DType dtype, int device_index, const void* a, const void* b,
          void* out) {
  if (dtype != DType::f32 && dtype != DType::f64) fail_dtype(spec.op, dtype);
  const Context& ctx = Context::get(device_index);
  ctx.make_current();
  if (spec.m == 0 || spec.n == 0 || spec.batch == 0) {
    if (spec.reduce && !spec.accumulate && spec.m * spec.n > 0) {  // a sum over nothing
      const auto bytes = static_cast<std::size_t>(spec.m * spec.n) * dtype_size(dtype);
      ATTNLAB_CUDA_CHECK(cudaMemsetAsync(out, 0, bytes, ctx.stream()));
    }
    return;
  }
  if (!fits_int(spec.m) || !fits_int(spec.n) || !fits_int(spec.k))
    throw_message(std::string(spec.op) + ": extents m = " + std::to_string(spec.m) +
                  ", n = " + std::to_string(spec.n) + ", k = " + std::to_string(spec.k) +
                  " exceed the cuBLAS integer range");
  if (dtype == DType::f32) {
    gemm_typed<float>(spec, static_cast<const float*>(a), static_cast<const float*>(b),
                      static_cast<float*>(out), ctx);
  } else {
    gemm_typed<double>(spec, static_cast<const double*>(a), static_cast<const double*>(b),
                       static_cast<double*>(out), ctx);
  }
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
