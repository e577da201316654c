#pragma once
// f32 GEMMs on the host through oneDNN's sgemm (dnnl_sgemm: its JIT GEMM, AVX-512 / AVX2 / SSE4.1
// by what the CPU has) instead of OpenBLAS's cblas_sgemm. On the AVX-512 CPUs measured it runs
// the training step's products at about twice OpenBLAS 0.3.21's rate (bench/README.md); OpenBLAS
// stays for f64, for builds without oneDNN, and for the batches of small products that
// gemm_cpu splits over the threads itself (attention's), where the two are on par.
#include <cstdint>
#include <string>

namespace attnlab::cpu {

// True when this build has oneDNN, oneDNN runs with AVX2 or later here (with SSE4.1 or AVX alone
// it is slower than OpenBLAS), and ATTNLAB_NO_ONEDNN_SGEMM is unset (set to anything but "" or
// "0", it sends every f32 product to OpenBLAS: the comparison bench/README.md reports, and
// another kernel path for tools/training_spread.sh). Read at each call.
bool onednn_sgemm_enabled();
// Why onednn_sgemm_enabled() is false, in words ("" when it is true).
std::string onednn_sgemm_disabled_reason();

// Row-major c [m, n] = op(a) op(b) + beta c; a is [m, k] ([k, m] when ta), b [k, n] ([n, k] when
// tb), with leading dimensions lda, ldb, ldc. oneDNN threads the product over OpenMP's threads.
// Throws an Error when disabled or when oneDNN refuses the arguments.
void onednn_sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                  const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc);

// Products computed by onednn_sgemm so far (for tests that check the path is taken).
std::uint64_t onednn_sgemm_calls();

}  // namespace attnlab::cpu
