#include "cpu/onednn_sgemm.h"

#include <atomic>

#include "attnlab/error.h"
#include "attnlab/env.h"

#if ATTNLAB_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

#include "cpu/onednn_isa.h"
#endif

namespace attnlab::cpu {
namespace {

std::atomic<std::uint64_t> g_calls{0};

}  // namespace

std::string onednn_sgemm_disabled_reason() {
  if (env::flag("ATTNLAB_NO_ONEDNN_SGEMM")) return "ATTNLAB_NO_ONEDNN_SGEMM is set";
#if ATTNLAB_HAVE_DNNL
  // With SSE4.1 or AVX alone oneDNN's sgemm ran at 0.5-0.7x OpenBLAS's; from AVX2 on, 1.3-2.6x.
  if (!onednn_runs_with(dnnl_cpu_isa_avx2)) return "oneDNN runs below AVX2 here (slower than OpenBLAS)";
  return "";
#else
  return "this build has no oneDNN (install libdnnl-dev and rebuild)";
#endif
}

bool onednn_sgemm_enabled() { return onednn_sgemm_disabled_reason().empty(); }

std::uint64_t onednn_sgemm_calls() { return g_calls.load(std::memory_order_relaxed); }

#if ATTNLAB_HAVE_DNNL
void onednn_sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                  const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  ATTNLAB_CHECK(onednn_sgemm_enabled(), "sgemm through oneDNN: {}", onednn_sgemm_disabled_reason());
  const dnnl_status_t status =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  ATTNLAB_CHECK(status == dnnl_success,
                "sgemm through oneDNN refused [{}, {}] x [{}, {}] (lda {}, ldb {}, ldc {}): status {}", m, k, k, n, lda,
                ldb, ldc, static_cast<int>(status));
  g_calls.fetch_add(1, std::memory_order_relaxed);
}
#else
void onednn_sgemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, const float*, std::int64_t, const float*,
                  std::int64_t, float, float*, std::int64_t) {
  throw Error(fmt::format("sgemm through oneDNN: {}", onednn_sgemm_disabled_reason()));
}
#endif

}  // namespace attnlab::cpu
