// GEMM kernels on the host, row-major: f32 products through oneDNN's sgemm where the build has
// oneDNN (cpu/onednn_sgemm.h), else and inside the batch split below OpenBLAS's cblas_sgemm; f64
// through cblas_dgemm; bf16 operands through oneDNN's matmul where the build and the CPU have it
// (cpu/bf16_gemm.h), else widened to f32 for sgemm.
//
// Threading: one large product runs as a single call that oneDNN (or OpenBLAS) threads itself. A batch
// of small products (attention's [B*h, T, d_head] matrices) is split over the batch with
// cpu::parallel_for instead: OpenBLAS (OpenMP build) sees it is inside a parallel region and runs
// each call single-threaded, so the threads do not oversubscribe.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

#include "cpu/bf16_gemm.h"
#include "cpu/convert_bf16.h"
#include "cpu/onednn_sgemm.h"
#include "cpu/parallel.h"
#include "ops/matmul_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

// Products below this many multiply-adds (m * n * k) thread poorly inside OpenBLAS; a batch of
// them is parallelized over its entries.
constexpr std::int64_t kSmallGemm = std::int64_t{1} << 21;  // 128^3
// A batch is split only when each thread gets at least this many multiply-adds.
constexpr std::int64_t kBatchGrainMacs = std::int64_t{1} << 16;

bool fits_blas_int(std::int64_t v) { return v <= static_cast<std::int64_t>(INT_MAX); }

template <typename T>
void blas_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
               const T* b, T beta, T* c) {
  // Row-major leading dimensions: the stored row length of each operand (at least 1).
  const auto lda = static_cast<blasint>(std::max<std::int64_t>(1, ta ? m : k));
  const auto ldb = static_cast<blasint>(std::max<std::int64_t>(1, tb ? k : n));
  const auto ldc = static_cast<blasint>(std::max<std::int64_t>(1, n));
  const auto op_a = ta ? CblasTrans : CblasNoTrans;
  const auto op_b = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    if (!omp_in_parallel() && cpu::onednn_sgemm_enabled()) {
      cpu::onednn_sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    cblas_sgemm(CblasRowMajor, op_a, op_b, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), 1.0f, a, lda, b, ldb, beta, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, op_a, op_b, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), 1.0, a, lda, b, ldb, beta, c, ldc);
  }
}

// bf16 operands, f32 output: oneDNN (cpu/bf16_gemm.h). Only reached outside parallel regions
// (runs_sequentially below).
void blas_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const bf16* a, const bf16* b,
               float beta, float* c) {
  cpu::bf16_gemm(ta, tb, m, n, k, reinterpret_cast<const std::uint16_t*>(a), reinterpret_cast<const std::uint16_t*>(b),
                 beta != 0.0f, c);
}

// TIn the operands' element type, TOut the output's (f32 for bf16 operands).
template <typename TIn, typename TOut>
void gemm_typed(const GemmSpec& s, const TIn* a, const TIn* b, TOut* c) {
  using T = TOut;
  const std::int64_t a_stride = s.a_shared ? 0 : s.m * s.k;
  const std::int64_t b_stride = s.b_shared ? 0 : s.k * s.n;
  const std::int64_t c_stride = s.reduce ? 0 : s.m * s.n;
  const T beta = s.accumulate ? T(1) : T(0);

  if (s.k == 0) {  // empty sums: the products are zero
    if (!s.accumulate) std::memset(c, 0, static_cast<std::size_t>((s.reduce ? 1 : s.batch) * s.m * s.n) * sizeof(T));
    return;
  }

  if (!s.reduce) {
    // A shared, untransposed b against a batch of untransposed a: the a matrices stacked are one
    // [batch * m, k] matrix, so the whole batch is one GEMM (the linear-layer case).
    if (s.b_shared && !s.a_shared && !s.trans_a && s.batch > 1 && fits_blas_int(s.batch * s.m)) {
      blas_gemm(false, s.trans_b, s.batch * s.m, s.n, s.k, a, b, beta, c);
      return;
    }
    const std::int64_t macs = s.m * s.n * s.k;
    const int threads = omp_get_max_threads();
    const bool split = threads > 1 && s.batch > 1 &&
                       (macs < kSmallGemm || s.batch >= 4 * threads || s.batch % threads == 0);
    const std::int64_t grain =
        split ? std::max<std::int64_t>(1, kBatchGrainMacs / std::max<std::int64_t>(1, macs)) : s.batch;
    cpu::parallel_for(s.batch, grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        blas_gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, a + i * a_stride, b + i * b_stride, beta,
                  c + i * c_stride);
      }
    });
    return;
  }

  // reduce: c = sum_i op(a[i]) op(b[i]). With a transposed and b not, the sum over the batch is
  // one product over a longer inner axis: [a[0]; a[1]; ...]^T [b[0]; b[1]; ...], and the stacked
  // matrices are the flat buffers (the weight gradient of a linear layer).
  if (s.batch == 1 ||
      (s.trans_a && !s.trans_b && !s.a_shared && !s.b_shared && fits_blas_int(s.batch * s.k))) {
    blas_gemm(s.trans_a, s.trans_b, s.m, s.n, s.batch * s.k, a, b, beta, c);
    return;
  }
  // Otherwise accumulate one product after the other; each call is threaded by OpenBLAS.
  for (std::int64_t i = 0; i < s.batch; ++i) {
    blas_gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, a + i * a_stride, b + i * b_stride, i == 0 ? beta : T(1), c);
  }
}

// Whether gemm_typed computes `s` with BLAS calls made one after the other outside any parallel
// region (one call, or a sequence accumulating into one output), so that each can go to oneDNN,
// which threads a product itself. A batch of separate products (attention's) is split over the
// threads instead, and then takes the widening path.
bool runs_sequentially(const GemmSpec& s) {
  if (omp_in_parallel()) return false;
  if (s.reduce || s.k == 0 || s.batch == 1) return true;
  return s.b_shared && !s.a_shared && !s.trans_a && fits_blas_int(s.batch * s.m);
}

// bf16 math with a bf16 output: oneDNN writes it where it takes the product in one call (the f32
// sums rounded once, to nearest even); otherwise the f32 product is computed and converted.
void gemm_bf16_out(const GemmSpec& spec, const Tensor& a, const Tensor& b, Tensor& out) {
  ATTNLAB_CHECK(!spec.accumulate && !spec.reduce, "{}: a bf16 output takes neither accumulate nor reduce",
                spec.op);
  if (cpu::bf16_gemm_available() && !omp_in_parallel() && spec.k > 0 && (spec.batch == 1 || spec.b_shared) &&
      !spec.a_shared && !spec.trans_a && fits_blas_int(spec.batch * spec.m)) {
    cpu::bf16_gemm(false, spec.trans_b, spec.batch * spec.m, spec.n, spec.k,
                   reinterpret_cast<const std::uint16_t*>(a.data<bf16>()),
                   reinterpret_cast<const std::uint16_t*>(b.data<bf16>()),
                   reinterpret_cast<std::uint16_t*>(out.data<bf16>()));
    return;
  }
  GemmSpec wide = spec;
  wide.bf16_out = false;
  Tensor f32 = Tensor::empty(out.shape(), DType::f32, out.device());
  gemm_cpu(wide, a, b, f32);
  cpu::f32_to_bf16(f32.data<float>(), reinterpret_cast<std::uint16_t*>(out.data<bf16>()), out.numel());
}

}  // namespace

void gemm_cpu(const GemmSpec& spec, const Tensor& a, const Tensor& b, Tensor& out) {
  if (spec.m == 0 || spec.n == 0 || spec.batch == 0) {
    if (spec.reduce && !spec.accumulate && out.numel() > 0) {  // a sum over nothing
      std::memset(out.raw_data(), 0, out.nbytes());
    }
    return;
  }
  ATTNLAB_CHECK(fits_blas_int(spec.m) && fits_blas_int(spec.n) && fits_blas_int(spec.k),
                "{}: extents m = {}, n = {}, k = {} exceed the BLAS integer range", spec.op, spec.m,
                spec.n, spec.k);
  if (spec.math == GemmMath::bf16) {
    // bf16 operands widened to f32 (exactly: a bf16 is the upper half of an f32), then sgemm:
    // the products of two 8-bit mantissas are exact in f32, so only the accumulation rounds, as
    // on a GPU's tensor cores with f32 accumulation.
    const DType out_dtype = spec.bf16_out ? DType::bf16 : DType::f32;
    ATTNLAB_CHECK(a.dtype() == DType::bf16 && b.dtype() == DType::bf16 && out.dtype() == out_dtype,
                  "{}: bf16 math takes bf16 operands and an {} output, got {}, {} and {}", spec.op,
                  dtype_name(out_dtype), a.str(), b.str(), out.str());
    if (spec.bf16_out) {
      gemm_bf16_out(spec, a, b, out);
      return;
    }
    if (cpu::bf16_gemm_available() && runs_sequentially(spec)) {
      gemm_typed(spec, a.data<bf16>(), b.data<bf16>(), out.data<float>());
      return;
    }
    const Tensor a32 = a.to(DType::f32), b32 = b.to(DType::f32);
    gemm_typed(spec, a32.data<float>(), b32.data<float>(), out.data<float>());
    return;
  }
  // tf32 math has no host counterpart: the CPU computes f32 exactly.
  dispatch_float(spec.op, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_typed(spec, a.data<T>(), b.data<T>(), out.data<T>());
  });
}

void gemm_bias_cpu(const GemmSpec& spec, const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& out) {
  fill_rows_cpu(bias, out);
  GemmSpec s = spec;
  s.accumulate = true;
  gemm_cpu(s, a, b, out);
}

void fill_rows_cpu(const Tensor& row, Tensor& out) {
  dispatch_float("fill_rows", out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pr = row.data<T>();
    T* po = out.data<T>();
    const std::int64_t cols = row.numel();
    const std::int64_t rows = cols == 0 ? 0 : out.numel() / cols;
    cpu::parallel_for(rows, cpu::row_grain(cols), [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t r = s; r < e; ++r) std::memcpy(po + r * cols, pr, static_cast<std::size_t>(cols) * sizeof(T));
    });
  });
}

}  // namespace attnlab::detail
