#pragma once
// The CPU backend's building blocks for plugins that write their own fused kernels (flash's CPU
// path): one BLAS product on raw row-major buffers, and the vectorized row functions of the
// core's softmax and loss (compiled for AVX-512, AVX2 and baseline x86-64; the loader picks one for
// the CPU, so results can differ in the last bit between CPUs, never between two runs on one).
#include <cstdint>

namespace attnlab::cpu {

// Row-major c [m, n] = alpha op(a) op(b) + beta c, a [m, k] ([k, m] when ta), b [k, n] ([n, k] when
// tb), with leading dimensions lda, ldb, ldc, through OpenBLAS. Inside a parallel region (a task
// of parallel_for) it runs on the calling thread alone; its sums never split k over threads, so
// its results do not depend on the thread count.
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc);
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc);

// max_k x[k] (-inf for n = 0; NaNs are skipped).
float max_row(const float* x, std::int64_t n);
// sum_k x[k], accumulated in double in eight lanes added in order.
double sum_row(const float* x, std::int64_t n);
// out[k] = scale * (exp(x[k] - shift) - sub), exp within 2 ulp of expf (0 below -87.3, +inf above
// 88.7); out may be x.
void exp_affine(const float* x, float shift, float scale, float sub, float* out, std::int64_t n);

}  // namespace attnlab::cpu
