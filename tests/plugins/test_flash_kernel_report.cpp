// What asks choose_kernel (plugins/attention/flash/flash_kernel_choice.h) besides forward() and
// backward(): the line of `attnlab plugins` (describe_cuda_kernels, flash_kernel_report.h) and the
// backward's scratch for bucket values (value_share_floats). Both must agree with the choice for
// the same problems, on every device and build; the lines and sizes of known GPUs are worked out
// by hand besides.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "flash_kernel_choice.h"
#include "flash_kernel_report.h"
#include "flash_sm90.h"
#include "support/flash_kernel_blocks.h"

namespace {

namespace fc = attnlab::flash::cuda;
using attnlab::flash::describe_cuda_kernels;
using fc::Kernel;
using fc::Pass;

constexpr std::size_t kKiB = 1024;
const fc::DeviceLimits h100{9, 0, 227 * kKiB}, a100{8, 0, 163 * kKiB}, rtx3090{8, 6, 99 * kKiB},
    t4{7, 5, 64 * kKiB}, unknown{}, small_h100{9, 0, 100 * kKiB};
const fc::BuiltKernels no_hopper = flash_kernel_blocks::blocks(false, false),
                       hopper_off = flash_kernel_blocks::blocks(true, false),
                       hopper_on = flash_kernel_blocks::blocks(true, true);

alignas(16) const unsigned char memory[64] = {};

fc::Problem problem(std::int64_t d) {
  fc::Problem p;
  p.element = fc::Element::bf16;
  p.batch = 2;
  p.heads = 3;
  p.tq = 300;
  p.tk = 200;
  p.dk = p.dv = d;
  p.q = p.k = p.v = memory;
  return p;
}
fc::KernelChoice choose(const fc::DeviceLimits& d, const fc::BuiltKernels& b, const fc::Problem& p, Pass pass) {
  return pass == Pass::forward ? fc::choose_kernel(d, b, p, pass, {memory})
                               : fc::choose_kernel(d, b, p, pass, {memory, memory, memory, memory, memory});
}
bool has(const std::string& line, const std::string& part) { return line.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("attnlab plugins names the kernels choose_kernel picks, head size by head size") {
  for (const fc::DeviceLimits& d : {h100, a100, rtx3090, small_h100})
    for (const fc::BuiltKernels& built : {no_hopper, hopper_off, hopper_on}) {
      const std::string line = describe_cuda_kernels(d, built);
      CAPTURE(line);
      for (std::int64_t size : {64, 128}) {
        const fc::KernelChoice f = choose(d, built, problem(size), Pass::forward);
        const fc::KernelChoice b = choose(d, built, problem(size), Pass::backward);
        const std::string head = "bf16 d " + std::to_string(size) + ": ";
        if (f.kernel == b.kernel && f.kernel != Kernel::fma)
          CHECK(has(line, head + fc::kernel_name(f.kernel) + ", forward and backward"));
        else if (f.kernel == b.kernel)
          CHECK(has(line, head + "FMA kernels ("));
        else
          CHECK(has(line, head + fc::kernel_name(f.kernel) + " forward, " + fc::kernel_name(b.kernel) + " backward ("));
      }
      // Relative positions: with the Hopper kernels where they take them, else with the FMA kernels.
      fc::Problem relative = problem(64);
      relative.bucket_scores = relative.bucket_values = memory;
      relative.value_clip = 1;
      const bool hopper = choose(d, built, relative, Pass::forward).kernel == Kernel::hopper &&
                          choose(d, built, relative, Pass::backward).kernel == Kernel::hopper;
      CHECK(has(line, "bucketed position terms (relative) and single-query steps: FMA kernels") != hopper);
      CHECK(has(line, "ALiBi and relative positions too") == hopper);
    }
}

TEST_CASE("attnlab plugins says which flash kernels known GPUs run") {
  const std::string fma =
      "f32, other head sizes, bucketed position terms (relative) and single-query steps: FMA kernels";
  CHECK(describe_cuda_kernels(a100, hopper_on) ==
        "bf16 d 64: tensor cores (WMMA), forward and backward; bf16 d 128: tensor cores (WMMA), forward and backward; " +
            fma);
  // 99 KiB: d 64 fits, d 128 runs on the FMA kernels, and the line says why (the larger block).
  CHECK(describe_cuda_kernels(rtx3090, no_hopper) ==
        "bf16 d 64: tensor cores (WMMA), forward and backward; bf16 d 128: FMA kernels (the tensor-core backward block "
        "needs 121 KiB of shared memory, the GPU gives 99 KiB); " +
            fma);
  CHECK(describe_cuda_kernels(t4, hopper_on) ==
        "sm_75 has no bf16 tensor-core MMA (sm_80 and newer): every problem on the FMA kernels");
  CHECK(describe_cuda_kernels(unknown, hopper_on) ==
        "the GPU's limits could not be read: every problem on the FMA kernels");
  // An H100 without the Hopper kernels, with them off, with them on.
  const std::string sm80 =
      "bf16 d 64: tensor cores (WMMA), forward and backward; bf16 d 128: tensor cores (WMMA), forward and backward; ";
  CHECK(describe_cuda_kernels(h100, no_hopper) ==
        sm80 + fma + "; Hopper's warpgroup MMA kernels are not in this build (no CUTLASS: cmake's "
                     "ATTNLAB_CUTLASS_DIR); the sm_80 kernels run");
  CHECK(describe_cuda_kernels(h100, hopper_off) ==
        sm80 + fma + "; Hopper's warpgroup MMA kernels are built but off until ATTNLAB_FLASH_SM90=1 (their parity is "
                     "checked by bench/gpu_checks.sh's sm90 phase); the sm_80 kernels run");
  CHECK(describe_cuda_kernels(h100, hopper_on) ==
        "bf16 d 64: Hopper's warpgroup MMA (sm_90a), forward and backward; bf16 d 128: Hopper's warpgroup MMA "
        "(sm_90a), forward and backward; f32, other head sizes and single-query steps: FMA kernels; Hopper's "
        "warpgroup MMA (ATTNLAB_FLASH_SM90=1) at d_k = d_v takes masks, dropout, ALiBi and relative positions too");
  // A GPU of sm_90 that gives less than the d 128 Hopper blocks: Hopper at d 64, the FMA kernels
  // at d 128 (the tensor cores' blocks do not fit either).
  CHECK(describe_cuda_kernels(small_h100, hopper_on) ==
        "bf16 d 64: Hopper's warpgroup MMA (sm_90a), forward and backward; bf16 d 128: FMA kernels (the tensor-core "
        "backward block needs 121 KiB of shared memory, the GPU gives 100 KiB; the largest Hopper block needs 161 KiB "
        "of shared memory, the GPU gives 100 KiB); f32, other head sizes and single-query steps: FMA kernels; "
        "Hopper's warpgroup MMA (ATTNLAB_FLASH_SM90=1) at d_k = d_v takes masks, dropout, ALiBi and relative "
        "positions too");
  // A later generation runs no sm_90a code, and the line does not mention it.
  CHECK_FALSE(has(describe_cuda_kernels({10, 0, 227 * kKiB}, hopper_on), "Hopper"));
}

TEST_CASE("value_share_floats sizes the scratch of the backward choose_kernel picks") {
  // B 2, H 3, Tq 300, Tk 200, clip 4 (9 buckets), d 64. Hopper: u per query and bucket, then a
  // share (buckets x d) per dQ block of 128 queries: 2 3 300 9 + 2 3 3 9 64. FMA kernels: a share
  // per dK/dV block of 32 keys: 2 3 7 9 64.
  fc::Problem p = problem(64);
  p.bucket_values = memory;
  p.value_clip = 4;
  const std::int64_t hopper = 2 * 3 * 300 * 9 + 2 * 3 * 3 * 9 * 64, fma = 2 * 3 * 7 * 9 * 64;
  CHECK(fc::value_share_floats(choose(h100, hopper_on, p, Pass::backward), p) == hopper);
  CHECK(fc::value_share_floats(choose(h100, hopper_off, p, Pass::backward), p) == fma);
  CHECK(fc::value_share_floats(choose(a100, hopper_on, p, Pass::backward), p) == fma);
  CHECK(fc::sm90_value_scratch_floats(p) == hopper);
  // Without bucket values, none; no keys, no dK/dV block.
  const fc::Problem plain = problem(64);
  CHECK(fc::value_share_floats(choose(h100, hopper_on, plain, Pass::backward), plain) == 0);
  CHECK(fc::value_share_floats(choose(a100, hopper_on, plain, Pass::backward), plain) == 0);
  fc::Problem keyless = p;
  keyless.tk = 0;
  CHECK(fc::value_share_floats(choose(a100, hopper_on, keyless, Pass::backward), keyless) == 0);
  // Wherever the backward runs, the scratch is that kernel's: Hopper's at d 128 with clip 80 (whose
  // forward runs on the FMA kernels), the FMA kernels' where Hopper's block does not fit.
  for (const fc::DeviceLimits& d : {h100, a100, small_h100, rtx3090})
    for (std::int64_t size : {64, 128})
      for (std::int64_t clip : {4, 80}) {
        fc::Problem q = problem(size);
        q.bucket_values = memory;
        q.value_clip = clip;
        const fc::KernelChoice c = choose(d, hopper_on, q, Pass::backward);
        CAPTURE(c.reason());
        const std::int64_t buckets = 2 * clip + 1;
        const std::int64_t want = c.kernel == Kernel::hopper ? 2 * 3 * 300 * buckets + 2 * 3 * 3 * buckets * size
                                                             : 2 * 3 * 7 * buckets * size;
        CHECK(c.kernel != Kernel::tensor_cores);
        CHECK(fc::value_share_floats(c, q) == want);
      }
  fc::Problem wide = problem(128);
  wide.bucket_values = memory;
  wide.value_clip = 80;
  CHECK(choose(h100, hopper_on, wide, Pass::forward).kernel == Kernel::fma);
  CHECK(fc::value_share_floats(choose(h100, hopper_on, wide, Pass::backward), wide) ==
        2 * 3 * 300 * 161 + 2 * 3 * 3 * 161 * 128);
}
