// NVRTC compiles flash's FMA kernels with the code generated for score expressions, for sm_80 and
// sm_90a, f32 and bf16, in bf16 the tensor-core kernels too, and for sm_90a in bf16 the Hopper
// kernels (CuTe's warpgroup MMA; in a build with CUTLASS), without a GPU: the CUBIN and the
// kernels' lowered names land in the kernel cache, and a second compile finds them there. Skipped
// in a build without CUDA.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>

#include "attnlab/attnlab.h"
#include "attnlab/expr/score_kernels.h"
#include "flash_attention.h"
#include "support/env_scope.h"

using namespace attnlab;

namespace {
// Whether the build has the Hopper kernels (CUTLASS): the tests are told where CuTe is.
#if defined(ATTNLAB_TEST_HOPPER_INCLUDES)
constexpr bool kHopperBuilt = true;
#else
constexpr bool kHopperBuilt = false;
#endif
}  // namespace

TEST_CASE("NVRTC compiles flash's kernels with score expressions for sm_80 and sm_90a, once") {
  if (!cuda_built()) {
    MESSAGE("skipped: this build has no CUDA");
    return;
  }
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       fmt::format("attnlab-nvrtc-{}-{}", ::getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
  testing::EnvScope env;
  env.set("ATTNLAB_KERNEL_CACHE", dir.c_str());
  expr::SiteExprs site;
  site.score_mod.text = "20 * tanh(score / 20) + bias[h, clamp(kv_idx - q_idx, -8, 8) + 8]";
  site.mask_mod.text = "kv_idx == 0 || abs(q_idx - kv_idx) <= 6";
  expr::TensorSpec bias;
  bias.name = "bias";
  bias.shape = {8, 17};
  bias.per_head = {true, false};
  bias.learned = true;
  const auto e = expr::ScoreExpr::build(site, {bias}, {8, 1024});
  for (const char* arch : {"sm_80", "sm_90a"})
    for (DType element : {DType::f32, DType::bf16}) {
      INFO(std::string(arch), " ", dtype_name(element));
      const flash::ExpressionKernels k = flash::compile_expression_kernels(*e, element, 64, 64, arch);
      CHECK(k.compiled_now);
      CHECK(k.cubin.size() > 1000);
      for (const std::string* name : {&k.forward, &k.dq, &k.dkdv}) {
        CHECK(name->starts_with("_Z"));  // a mangled kernel name
        CHECK(k.cubin.find(*name) != std::string::npos);
      }
      CHECK(k.forward.find("forward_kernel") != std::string::npos);
      // The tensor-core kernels: bf16 at head size 64 only.
      for (const std::string* name : {&k.tc_forward, &k.tc_dq, &k.tc_dkdv}) {
        CHECK(name->empty() == (element == DType::f32));
        if (!name->empty()) CHECK(k.cubin.find(*name) != std::string::npos);
      }
      CHECK((k.tc_dkdv.find("2tc") != std::string::npos) == (element == DType::bf16));
      // The Hopper kernels: bf16 for sm_90a, where the build has them.
      const bool hopper = element == DType::bf16 && arch == std::string("sm_90a") && kHopperBuilt;
      for (const std::string* name : {&k.hopper_forward, &k.hopper_dq, &k.hopper_dkdv}) {
        CHECK(name->empty() == !hopper);
        if (!name->empty()) CHECK(k.cubin.find(*name) != std::string::npos);
      }
      CHECK((k.hopper_dq.find("4sm90") != std::string::npos) == hopper);
      // Again: from the cache.
      const flash::ExpressionKernels again = flash::compile_expression_kernels(*e, element, 64, 64, arch);
      CHECK_FALSE(again.compiled_now);
      CHECK(again.cubin == k.cubin);
    }
  std::error_code ec;
  fs::remove_all(dir, ec);
}
