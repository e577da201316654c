// cpu::gemm (attnlab/cpu_kernels.h): one OpenBLAS product on raw row-major buffers.
#include <cblas.h>

#include <algorithm>

#include "attnlab/cpu_kernels.h"
#include "attnlab/error.h"

namespace attnlab::cpu {
namespace {

template <typename T, typename F>
void checked(std::int64_t m, std::int64_t n, std::int64_t k, F&& call) {
  ATTNLAB_CHECK(m >= 0 && n >= 0 && k >= 0 && m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX,
                "cpu::gemm: sizes m {}, n {}, k {} outside the BLAS's range", m, n, k);
  if (m == 0 || n == 0) return;
  call();
}

}  // namespace

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  checked<float>(m, n, k, [&] {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(std::max<std::int64_t>(1, lda)),
                b, static_cast<blasint>(std::max<std::int64_t>(1, ldb)), beta, c,
                static_cast<blasint>(std::max<std::int64_t>(1, ldc)));
  });
}

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  checked<double>(m, n, k, [&] {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(std::max<std::int64_t>(1, lda)),
                b, static_cast<blasint>(std::max<std::int64_t>(1, ldb)), beta, c,
                static_cast<blasint>(std::max<std::int64_t>(1, ldc)));
  });
}

}  // namespace attnlab::cpu
