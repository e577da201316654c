// cpu::gemm (attnlab/cpu_kernels.h): one OpenBLAS product on raw row-major buffers.
#include <cblas.h>

#include <algorithm>

#include "attnlab/cpu_kernels.h"
#include "attnlab/error.h"

namespace attnlab::cpu {
namespace {

blasint leading(std::int64_t ld) { return static_cast<blasint>(std::max<std::int64_t>(1, ld)); }
CBLAS_TRANSPOSE op(bool transposed) { return transposed ? CblasTrans : CblasNoTrans; }

// C = alpha op(A) op(B) + beta C through BLAS's sgemm or dgemm (`blas`), sizes checked against its
// 32-bit range; an empty C is left as it is.
template <typename T, typename Blas>
void row_major(Blas blas, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
               std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  ATTNLAB_CHECK(m >= 0 && n >= 0 && k >= 0 && m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX,
                "cpu::gemm: sizes m {}, n {}, k {} outside the BLAS's range", m, n, k);
  if (m == 0 || n == 0) return;
  blas(CblasRowMajor, op(ta), op(tb), static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha,
       a, leading(lda), b, leading(ldb), beta, c, leading(ldc));
}

}  // namespace

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  row_major(cblas_sgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  row_major(cblas_dgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace attnlab::cpu
