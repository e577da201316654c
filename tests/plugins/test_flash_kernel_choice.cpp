// choose_kernel (plugins/attention/flash/flash_kernel_choice.h), the one decision of which CUDA
// kernels serve a flash problem, against hand-worked cases: sm_80, sm_86, sm_75, sm_90 and
// unreadable devices; the Hopper kernels built or not, asked for or not; bf16 and f32; head sizes
// 16 to 128 and d_k != d_v; one query; ALiBi's slopes, bucket scores and bucket values (with a
// value_clip whose shared memory does not fit); dropout; misaligned tensors; and where the forward
// and the backward of one problem part ways. Also the head-size dispatch the launchers share
// (flash_head_sizes.h). The blocks are the kernels' own (support/flash_kernel_blocks.h).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "flash_head_sizes.h"
#include "flash_kernel_choice.h"
#include "flash_sm90.h"
#include "support/flash_kernel_blocks.h"

namespace {

namespace fc = attnlab::flash::cuda;
using fc::Kernel;
using fc::Pass;
using fc::Refusal;

constexpr std::size_t kKiB = 1024;
const fc::DeviceLimits h100{9, 0, 227 * kKiB}, a100{8, 0, 163 * kKiB}, rtx3090{8, 6, 99 * kKiB},
    t4{7, 5, 64 * kKiB}, unknown{};
const fc::BuiltKernels no_hopper = flash_kernel_blocks::blocks(false, false),
                       hopper_off = flash_kernel_blocks::blocks(true, false),
                       hopper_on = flash_kernel_blocks::blocks(true, true);

// 16-byte aligned memory for the problems' pointers (never read).
alignas(16) const unsigned char memory[64] = {};
const void* const aligned = memory;
const void* const misaligned = memory + 2;

// Self-attention, B 2, H 3, T 300, d_k = d, d_v = dv (d when 0), bf16 unless said, every tensor aligned.
fc::Problem problem(std::int64_t d = 64, std::int64_t dv = 0, fc::Element element = fc::Element::bf16) {
  fc::Problem p;
  p.element = element;
  p.batch = 2;
  p.heads = 3;
  p.tq = p.tk = 300;
  p.dk = d;
  p.dv = dv > 0 ? dv : d;
  p.q = p.k = p.v = aligned;
  return p;
}

fc::KernelChoice forward(const fc::DeviceLimits& d, const fc::BuiltKernels& b, const fc::Problem& p,
                         const void* out = aligned) {
  return fc::choose_kernel(d, b, p, Pass::forward, {out});
}
fc::KernelChoice backward(const fc::DeviceLimits& d, const fc::BuiltKernels& b, const fc::Problem& p,
                          const void* dq = aligned) {
  return fc::choose_kernel(d, b, p, Pass::backward, {aligned, aligned, dq, aligned, aligned});
}

}  // namespace

TEST_CASE("choose_kernel: sm_80 runs bf16 at d 64 and 128 on tensor cores, the rest on the FMA kernels") {
  for (std::int64_t dk : {64, 128})
    for (std::int64_t dv : {64, 128}) {
      fc::Problem p = problem(dk);
      p.dv = dv;
      const fc::KernelChoice f = forward(a100, hopper_on, p), b = backward(a100, hopper_on, p);
      CAPTURE(f.reason());
      CHECK(f.kernel == Kernel::tensor_cores);
      CHECK(b.kernel == Kernel::tensor_cores);
      CHECK((f.dk == dk && f.dv == dv && b.dk == dk && b.dv == dv));  // the template variant
      CHECK(f.tensor_cores.smem == flash_kernel_blocks::kTcForward[fc::MmaHeadSizes::index(dk)][fc::MmaHeadSizes::index(dv)]);
      CHECK(b.tensor_cores.smem == flash_kernel_blocks::kTcBackward[fc::MmaHeadSizes::index(dk)][fc::MmaHeadSizes::index(dv)]);
      CHECK(f.hopper.why == Refusal::architecture);  // sm_90a code runs on sm_90 only, switch or not
    }
  CHECK(forward(a100, no_hopper, problem()).reason() ==
        "tensor cores (WMMA): sm_80, bf16 d 64, its forward block (70 KiB) fits the GPU's 163 KiB");
  const fc::Problem mixed = problem(64, 128);
  CHECK(backward(a100, no_hopper, mixed).reason() ==
        "tensor cores (WMMA): sm_80, bf16 d_k 64, d_v 128, its backward block (105 KiB) fits the GPU's 163 KiB");

  const fc::Problem f32 = problem(64, 64, fc::Element::f32);
  const fc::KernelChoice c = forward(a100, no_hopper, f32);
  CHECK(c.kernel == Kernel::fma);
  CHECK(c.tensor_cores.why == Refusal::element);
  CHECK(c.reason() == "FMA kernels: f32 has no tensor-core kernel");
  for (std::int64_t d : {16, 32}) {
    fc::Problem small = problem();
    small.dk = d;
    const fc::KernelChoice s = backward(a100, no_hopper, small);
    CHECK(s.kernel == Kernel::fma);
    CHECK((s.dk == d && s.dv == 64));
    CHECK(s.reason() == "FMA kernels: head sizes d_k " + std::to_string(d) +
                            ", d_v 64 have no tensor-core kernel (64 and 128 do)");
    small = problem();
    small.dv = d;
    CHECK(forward(a100, no_hopper, small).kernel == Kernel::fma);
  }
  // A size no kernel is compiled for: flash_attention refuses it first; the launchers would too.
  fc::Problem odd = problem();
  odd.dk = odd.dv = 48;
  CHECK(forward(a100, no_hopper, odd).kernel == Kernel::none);
  CHECK(forward(a100, no_hopper, odd).reason() ==
        "no kernel: head sizes d_k 48, d_v 48 are not compiled for CUDA (16, 32, 64 and 128 are)");
  // One decoding step stays on the FMA kernels.
  fc::Problem step = problem();
  step.tq = 1;
  CHECK(forward(a100, no_hopper, step).tensor_cores.why == Refusal::one_query);
  CHECK(forward(a100, no_hopper, step).reason() == "FMA kernels: a single query (a decoding step) has no tensor-core kernel");
}

TEST_CASE("choose_kernel: a block the device cannot hold goes to the FMA kernels, pass by pass") {
  // sm_86's 99 KiB: d 64 both ways; d 128 neither (forward 110 KiB, backward 120.5); d_k 64,
  // d_v 128 forward only (94 KiB forward, 104.5 backward).
  CHECK(forward(rtx3090, no_hopper, problem(64)).kernel == Kernel::tensor_cores);
  CHECK(backward(rtx3090, no_hopper, problem(64)).kernel == Kernel::tensor_cores);
  const fc::KernelChoice big = forward(rtx3090, no_hopper, problem(128));
  CHECK(big.kernel == Kernel::fma);
  CHECK(big.tensor_cores.why == Refusal::shared_memory);
  CHECK(big.tensor_cores.smem == 110 * kKiB);
  CHECK(big.reason() == "FMA kernels: the tensor-core forward block needs 110 KiB of shared memory, the GPU gives 99 KiB");
  const fc::Problem mixed = problem(64, 128);
  CHECK(forward(rtx3090, no_hopper, mixed).kernel == Kernel::tensor_cores);
  const fc::KernelChoice b = backward(rtx3090, no_hopper, mixed);
  CHECK(b.kernel == Kernel::fma);
  CHECK(b.reason() == "FMA kernels: the tensor-core backward block needs 105 KiB of shared memory, the GPU gives 99 KiB");
}

TEST_CASE("choose_kernel: no tensor cores before sm_80, none where the limits could not be read") {
  for (const fc::BuiltKernels& built : {no_hopper, hopper_on}) {
    const fc::KernelChoice old = forward(t4, built, problem()), blind = backward(unknown, built, problem());
    CHECK(old.kernel == Kernel::fma);
    CHECK(old.tensor_cores.why == Refusal::architecture);
    CHECK(old.reason() == "FMA kernels: sm_75 has no bf16 tensor-core MMA (sm_80 and newer)");
    CHECK(blind.kernel == Kernel::fma);
    CHECK(blind.hopper.why == Refusal::no_limits);
    CHECK(blind.reason() == "FMA kernels: the GPU's limits could not be read");
  }
}

TEST_CASE("choose_kernel: sm_90 runs the Hopper kernels where they are built and asked for") {
  for (std::int64_t d : {64, 128}) {
    CAPTURE(d);
    // Not built, built but not asked for: the tensor cores, and the reason says why not Hopper.
    const fc::KernelChoice absent = forward(h100, no_hopper, problem(d)), off = backward(h100, hopper_off, problem(d));
    CHECK(absent.kernel == Kernel::tensor_cores);
    CHECK(absent.hopper.why == Refusal::not_built);
    CHECK(absent.reason().find("; the Hopper kernels are not in this build") != std::string::npos);
    CHECK(off.kernel == Kernel::tensor_cores);
    CHECK(off.hopper.why == Refusal::not_opted_in);
    CHECK(off.reason().find("; the Hopper kernels are off until ATTNLAB_FLASH_SM90=1") != std::string::npos);
    // Asked for: Hopper both ways, at the head size's template.
    const fc::KernelChoice f = forward(h100, hopper_on, problem(d)), b = backward(h100, hopper_on, problem(d));
    CHECK(f.kernel == Kernel::hopper);
    CHECK(b.kernel == Kernel::hopper);
    CHECK((f.dk == d && b.dk == d));
    CHECK(f.hopper.smem == flash_kernel_blocks::kHopperForward[fc::MmaHeadSizes::index(d)]);
    CHECK(b.hopper.smem == flash_kernel_blocks::kHopperBackward[fc::MmaHeadSizes::index(d)]);
    // The tensor cores' verdict stands beside it: they would have taken it.
    CHECK(f.tensor_cores.takes());
  }
  CHECK(forward(h100, hopper_on, problem(128)).reason() ==
        "Hopper's warpgroup MMA (sm_90a): sm_90, bf16 d 128, its forward block (161 KiB) fits the GPU's 227 KiB");
  CHECK(forward(h100, no_hopper, problem(64)).reason() ==
        "tensor cores (WMMA): sm_90, bf16 d 64, its forward block (70 KiB) fits the GPU's 227 KiB; the Hopper kernels "
        "are not in this build (no CUTLASS: cmake's ATTNLAB_CUTLASS_DIR)");
  // The switch alone does nothing where the build has no Hopper kernels.
  const fc::BuiltKernels asked_not_built = flash_kernel_blocks::blocks(false, true);
  CHECK(forward(h100, asked_not_built, problem()).kernel == Kernel::tensor_cores);
  // Another GPU of a later generation runs no sm_90a code.
  CHECK(forward({10, 0, 227 * kKiB}, hopper_on, problem()).kernel == Kernel::tensor_cores);
  CHECK(forward({9, 1, 227 * kKiB}, hopper_on, problem()).hopper.why == Refusal::architecture);
}

TEST_CASE("choose_kernel: what the Hopper kernels refuse goes to the tensor cores or the FMA kernels") {
  const fc::Problem mixed = problem(64, 128);
  const fc::KernelChoice unequal = backward(h100, hopper_on, mixed);
  CHECK(unequal.kernel == Kernel::tensor_cores);
  CHECK(unequal.hopper.why == Refusal::unequal_heads);
  CHECK(unequal.reason() == "tensor cores (WMMA): sm_90, bf16 d_k 64, d_v 128, its backward block (105 KiB) fits the "
                            "GPU's 227 KiB; d_k 64 != d_v 128 has no Hopper kernel");
  const fc::Problem f32 = problem(64, 64, fc::Element::f32);
  const fc::KernelChoice c = forward(h100, hopper_on, f32);
  CHECK(c.kernel == Kernel::fma);
  CHECK(c.hopper.why == Refusal::element);
  CHECK(c.reason() == "FMA kernels: f32 has no tensor-core kernel");  // one reason, said once
  fc::Problem step = problem();
  step.tq = 1;
  CHECK(forward(h100, hopper_on, step).kernel == Kernel::fma);
  CHECK(forward(h100, hopper_on, step).hopper.why == Refusal::one_query);
  fc::Problem small = problem(32);
  CHECK(backward(h100, hopper_on, small).kernel == Kernel::fma);
  CHECK(backward(h100, hopper_on, small).hopper.why == Refusal::head_size);
  // A device of sm_90 that gives less than the d 128 blocks (161 KiB): Hopper at d 64 only; at
  // d 128 the tensor cores' 110 KiB does not fit either.
  const fc::DeviceLimits small_h{9, 0, 100 * kKiB};
  CHECK(forward(small_h, hopper_on, problem(64)).kernel == Kernel::hopper);
  const fc::KernelChoice wide = forward(small_h, hopper_on, problem(128));
  CHECK(wide.kernel == Kernel::fma);
  CHECK(wide.hopper.why == Refusal::shared_memory);
  CHECK(wide.hopper.smem == 161 * kKiB);
  CHECK(wide.reason() == "FMA kernels: the tensor-core forward block needs 110 KiB of shared memory, the GPU gives "
                         "100 KiB; the largest Hopper block needs 161 KiB of shared memory, the GPU gives 100 KiB");
  // The Hopper backward's blocks (129 KiB) would fit a 150 KiB device at d 128, but its forward's
  // do not: both passes stay on one family.
  const fc::DeviceLimits mid_h{9, 0, 150 * kKiB};
  CHECK(backward(mid_h, hopper_on, problem(128)).kernel == Kernel::tensor_cores);
  CHECK(backward(mid_h, hopper_on, problem(128)).hopper.smem == 161 * kKiB);
}

TEST_CASE("choose_kernel: score expressions run on the families NVRTC compiled them into") {
  const attnlab::expr::DeviceArgs args{};
  int fake[9] = {};  // stand-ins for the compiled kernels' handles (never launched here)
  fc::Problem p = problem(64);
  p.expr = &args;
  p.expr_fma = {&fake[0], &fake[1], &fake[2]};
  // Without the tensor-core family's kernels (not compiled for the problem): the FMA kernels.
  const fc::KernelChoice fma = forward(a100, no_hopper, p);
  CHECK(fma.kernel == Kernel::fma);
  CHECK(fma.tensor_cores.why == Refusal::expressions);
  CHECK(fma.reason() == "FMA kernels: score expressions were not compiled into the tensor-core kernels");
  // With them: the tensor cores, on sm_80 and on sm_90 where the Hopper kernels were not compiled
  // (the switch is what compiles them: without it they say so first).
  p.expr_tc = {&fake[3], &fake[4], &fake[5]};
  CHECK(forward(a100, no_hopper, p).kernel == Kernel::tensor_cores);
  CHECK(backward(h100, hopper_off, p).hopper.why == Refusal::not_opted_in);
  const fc::KernelChoice h = backward(h100, hopper_on, p);
  CHECK(h.kernel == Kernel::tensor_cores);
  CHECK(h.hopper.why == Refusal::expressions);
  CHECK(h.reason() == "tensor cores (WMMA): sm_90, bf16 d 64, its backward block (89 KiB) fits the GPU's "
                      "227 KiB; score expressions were not compiled into the Hopper kernels");
  // Compiled for sm_90a: Hopper's, both passes.
  p.expr_hopper = {&fake[6], &fake[7], &fake[8]};
  CHECK(forward(h100, hopper_on, p).kernel == Kernel::hopper);
  CHECK(backward(h100, hopper_on, p).kernel == Kernel::hopper);
  // Not with bucket values (their variant is not compiled): the FMA kernels, which take them.
  fc::Problem values = p;
  values.bucket_values = aligned;
  values.value_clip = 4;
  const fc::KernelChoice v = forward(h100, hopper_on, values);
  CHECK(v.hopper.why == Refusal::bucket_terms);
  CHECK(fc::refusal_text(v, Kernel::hopper) == "score expressions with relative positions' bucket values have no "
                                                "Hopper kernel");
  // What the MMA families refuse anyway is said first: f32 has no tensor-core kernel.
  fc::Problem f32 = problem(64, 64, fc::Element::f32);
  f32.expr = &args;
  CHECK(forward(a100, no_hopper, f32).tensor_cores.why == Refusal::element);
}

TEST_CASE("choose_kernel: position terms and dropout") {
  static const float slopes[3] = {0.5f, 0.25f, 0.125f};
  fc::Problem alibi = problem(), scores = problem(), values = problem();
  alibi.slopes = scores.slopes = values.slopes = slopes;
  scores.bucket_scores = aligned;
  scores.score_clip = 4;
  values.bucket_values = aligned;
  values.value_clip = 16;
  // ALiBi's slopes: every MMA family applies them.
  CHECK(forward(a100, no_hopper, alibi).kernel == Kernel::tensor_cores);
  CHECK(backward(h100, hopper_on, alibi).kernel == Kernel::hopper);
  // Bucket scores and values: the Hopper kernels, else the FMA kernels.
  for (const fc::Problem& p : {scores, values}) {
    CHECK(forward(a100, hopper_on, p).kernel == Kernel::fma);
    CHECK(forward(a100, hopper_on, p).tensor_cores.why == Refusal::bucket_terms);
    CHECK(forward(h100, hopper_on, p).kernel == Kernel::hopper);
    CHECK(backward(h100, hopper_on, p).kernel == Kernel::hopper);
  }
  CHECK(backward(h100, hopper_off, scores).reason() ==
        "FMA kernels: relative positions' bucket terms have no tensor-core kernel; the Hopper kernels are off until "
        "ATTNLAB_FLASH_SM90=1");
  // The forward's block and the dQ block hold a float per query and value bucket besides their
  // tiles: clip 16 adds 16.5 KiB.
  CHECK(fc::sm90_value_smem(values) == 128 * 33 * sizeof(float));
  CHECK(fc::sm90_value_smem(scores) == 0);
  CHECK(forward(h100, hopper_on, values).hopper.smem == 81 * kKiB + 128 * 33 * 4);
  CHECK(backward(h100, hopper_on, values).hopper.smem == 65 * kKiB + 128 * 33 * 4);
  // Clip 80 adds 80.5 KiB: at d 64 everything fits (forward 161.5 KiB, dQ 145.5); at d 128 the
  // forward does not (241.5 KiB: the FMA kernels) while the backward does (209.5 KiB: Hopper).
  values.value_clip = 80;
  CHECK(forward(h100, hopper_on, values).kernel == Kernel::hopper);
  CHECK(backward(h100, hopper_on, values).kernel == Kernel::hopper);
  values.dk = values.dv = 128;
  const fc::KernelChoice f = forward(h100, hopper_on, values), b = backward(h100, hopper_on, values);
  CHECK(f.kernel == Kernel::fma);
  CHECK(f.hopper.why == Refusal::shared_memory);
  CHECK(f.hopper.smem == 161 * kKiB + 128 * 161 * 4);
  CHECK(f.reason() == "FMA kernels: relative positions' bucket terms have no tensor-core kernel; the largest Hopper "
                      "block needs 242 KiB of shared memory, the GPU gives 227 KiB");
  CHECK(b.kernel == Kernel::hopper);
  CHECK(b.hopper.smem == 129 * kKiB + 128 * 161 * 4);
  // Dropout: every kernel applies it.
  fc::Problem dropped = problem();
  dropped.dropout = 0.1;
  CHECK(forward(a100, no_hopper, dropped).kernel == Kernel::tensor_cores);
  CHECK(forward(h100, hopper_on, dropped).kernel == Kernel::hopper);
  dropped.bucket_values = aligned;
  CHECK(backward(h100, hopper_on, dropped).kernel == Kernel::hopper);
  CHECK(backward(a100, hopper_on, dropped).kernel == Kernel::fma);
}

TEST_CASE("choose_kernel: every tensor of a pass must be 16-byte aligned for the MMA kernels") {
  for (const fc::DeviceLimits& d : {a100, h100}) {
    fc::Problem p = problem();
    p.k = misaligned;
    const fc::KernelChoice c = forward(d, hopper_on, p);
    CHECK(c.kernel == Kernel::fma);
    CHECK(c.tensor_cores.why == Refusal::misaligned);
    CHECK(c.reason() == "FMA kernels: a tensor is not 16-byte aligned, as the tensor-core kernels' vector loads need");
    // The forward's out, and the backward's gradients: each pass asks about its own buffers.
    CHECK(forward(d, hopper_on, problem(), misaligned).kernel == Kernel::fma);
    CHECK(backward(d, hopper_on, problem(), misaligned).kernel == Kernel::fma);
    CHECK(forward(d, hopper_on, problem()).kernel != Kernel::fma);  // a misaligned dq is the backward's alone
    CHECK(fc::choose_kernel(d, hopper_on, problem(), Pass::backward, {aligned, misaligned}).kernel == Kernel::fma);
  }
}

TEST_CASE("HeadSizes: one dispatch from a run-time head size to a template argument") {
  using fc::CudaHeadSizes;
  using fc::MmaHeadSizes;
  for (std::int64_t d : {16, 32, 64, 128}) CHECK(CudaHeadSizes::has(d));
  CHECK_FALSE(CudaHeadSizes::has(48));
  CHECK(MmaHeadSizes::has(64));
  CHECK_FALSE(MmaHeadSizes::has(32));
  const auto twice = [](auto d) { return 2 * decltype(d)::value; };
  CHECK(MmaHeadSizes::with(128, -1, twice) == 256);
  CHECK(MmaHeadSizes::with(16, -1, twice) == -1);
  const auto pair = [](auto dk, auto dv) { return 1000 * decltype(dk)::value + decltype(dv)::value; };
  CHECK(CudaHeadSizes::with(16, 128, -1, pair) == 16128);
  CHECK(CudaHeadSizes::with(128, 16, -1, pair) == 128016);
  CHECK(CudaHeadSizes::with(128, 48, -1, pair) == -1);
  CHECK(MmaHeadSizes::with(64, 16, -1, pair) == -1);
  static_assert(MmaHeadSizes::with(64, 0, twice) == 128, "usable in constant expressions");
}
