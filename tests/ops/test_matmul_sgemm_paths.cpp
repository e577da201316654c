// The two paths of an f32 product on the host (core/src/ops/matmul_cpu.cpp): oneDNN's sgemm,
// taken where the build has oneDNN, and OpenBLAS's cblas_sgemm, taken without it or with
// ATTNLAB_NO_ONEDNN_SGEMM set. Each shape of product the model makes (a linear layer, its weight
// gradient, a batch against a shared matrix, one large threaded product) is checked on both
// paths against the same product in f64 (cblas_dgemm), and the counter says which path ran.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "attnlab/attnlab.h"
#include "cpu/onednn_sgemm.h"
#include "support/env_scope.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;

namespace {

// Sets or clears ATTNLAB_NO_ONEDNN_SGEMM for one scope, then restores what the environment had
// (tools/test_every_kernel.sh runs every test with it set).
struct OpenBlasOnly {
  explicit OpenBlasOnly(bool on) { env.set("ATTNLAB_NO_ONEDNN_SGEMM", on ? "1" : nullptr); }
  testing::EnvScope env;
};

// Why this process sends no f32 product to oneDNN with the switch off ("" when it does).
std::string onednn_off_without_switch() {
  const OpenBlasOnly env(false);
  return cpu::onednn_sgemm_disabled_reason();
}

// f32 sums of up to k products of values in [-1, 1): a few units in the last place of sqrt(k).
constexpr testing::Tolerance kSumTolerance{2e-5, 1e-5};

struct Case {
  const char* what;
  Shape a, b;
  bool ta, tb;
};

}  // namespace

TEST_CASE("f32 products equal the f64 product on the oneDNN and the OpenBLAS path") {
  const Case cases[] = {
      {"linear: [300, 70] x [50, 70]^T", {300, 70}, {50, 70}, false, true},
      {"plain: [300, 70] x [70, 50]", {300, 70}, {70, 50}, false, false},
      {"weight gradient: [300, 50]^T x [300, 70]", {300, 50}, {300, 70}, true, false},
      {"both transposed: [70, 40]^T x [50, 70]^T", {70, 40}, {50, 70}, true, true},
      {"a batch against a shared matrix: [3, 40, 70] x [50, 70]^T", {3, 40, 70}, {50, 70}, false, true},
      {"weight gradient over a batch: [3, 40, 50]^T x [3, 40, 70], summed", {3, 40, 50}, {3, 40, 70}, true, false},
      {"one large product, threaded: [512, 256] x [384, 256]^T", {512, 256}, {384, 256}, false, true},
  };
  const std::string off = onednn_off_without_switch();
  const bool with_onednn = off.empty();
  if (!with_onednn) MESSAGE("oneDNN's sgemm is off (" << off << "): the OpenBLAS path only");
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const Tensor a = random_tensor(c.a, seed++), b = random_tensor(c.b, seed++);
    const bool summed = std::string_view(c.what).find("summed") != std::string_view::npos;
    const auto product = [&](const Tensor& x, const Tensor& y) {
      if (!summed) return matmul(x, y, c.ta, c.tb);
      // The weight gradient of a linear layer over [batch, rows, features] inputs: one product
      // over the stacked rows.
      return matmul(x.reshape({-1, x.dim(-1)}), y.reshape({-1, y.dim(-1)}), true, false);
    };
    const Tensor want = product(a.to(DType::f64), b.to(DType::f64));
    for (const bool openblas_only : {false, true}) {
      CAPTURE(openblas_only);
      const OpenBlasOnly env(openblas_only);
      const std::uint64_t before = cpu::onednn_sgemm_calls();
      const Tensor got = product(a, b);
      CHECK(got.dtype() == DType::f32);
      CHECK(got.shape() == want.shape());
      CHECK_TENSOR_NEAR(got, want.to(DType::f32), kSumTolerance);
      CHECK(cpu::onednn_sgemm_calls() - before == (with_onednn && !openblas_only ? 1u : 0u));
    }
  }
}

TEST_CASE("the OpenBLAS switch, a build without oneDNN and a CPU below AVX2 say why oneDNN's sgemm is off") {
  const std::string build_reason = onednn_off_without_switch();
  CHECK((build_reason.empty() || build_reason == "this build has no oneDNN (install libdnnl-dev and rebuild)" ||
         build_reason == "oneDNN runs below AVX2 here (slower than OpenBLAS)"));
  if (!build_reason.empty()) MESSAGE("oneDNN's sgemm is off in this process: " << build_reason);
  const OpenBlasOnly env(true);
  CHECK_FALSE(cpu::onednn_sgemm_enabled());
  CHECK(cpu::onednn_sgemm_disabled_reason() == "ATTNLAB_NO_ONEDNN_SGEMM is set");
  const float x = 1.0f;
  float y = 0.0f;
  CHECK_THROWS_WITH_AS(cpu::onednn_sgemm(false, false, 1, 1, 1, &x, 1, &x, 1, 0.0f, &y, 1),
                       "sgemm through oneDNN: ATTNLAB_NO_ONEDNN_SGEMM is set", Error);
}
