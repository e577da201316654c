// The Hopper flash forward's device code (plugins/attention/flash/flash_sm90_forward_kernel.cuh)
// run on host threads, its warpgroup MMAs and asynchronous copies emulated
// (support/cuda_sm90_host_emulation.h), against the CPU path of flash_attention in f64: query and
// key tiles cut by the sequence ends, causal masking with Tq = Tk, Tq < Tk and Tq > Tk, padding
// masks with a fully padded batch row, key lengths, ALiBi's distance bias with relative positions'
// bucket scores and bucket values, dropout on the weights, head sizes 64 and 128, and the
// two-stage K/V pipeline over several key tiles. The kernel itself, on a Hopper GPU, is
// bench/gpu_checks.sh's sm90 phase.
#include <doctest/doctest.h>

// First: CuTe, CUDA's host headers and the emulated threads and Hopper operations.
#include "support/cuda_sm90_host_emulation.h"
#include "flash_forward_kernels.cuh"
#include "flash_sm90_forward_kernel.cuh"
#include "support/flash_emulated_cases.h"
#include "emulated_sm90_forward.h"
#include "flash_kernel_choice.h"
#include "support/flash_kernel_blocks.h"
#include "support/emulation_orders.h"

namespace {

using namespace flash_emulated_cases;

template <int D>
void run_sm90_case(const Case& c, std::uint64_t seed) {
  using T = __nv_bfloat16;
  INFO("Hopper forward: B ", c.b, " H ", c.h, " Tq ", c.tq, " Tk ", c.tk, " d ", D, " causal ", c.causal, " mask ",
       c.mask, " lengths ", c.lengths, " terms ", c.terms, " values ", c.terms && c.value_terms, " value clip ",
       c.value_clip, " dropout ", c.dropout);
  const auto r = prepare<T, D, D>(c, seed);
  const auto [out, lse] = emu::in_every_thread_order([&] {
    std::vector<T> out;
    std::vector<float> lse;
    run_sm90_forward<D>(c, sm90_inputs<D>(c, r), out, lse);
    return std::tuple(out, lse);
  });
  // P enters P V in bf16, as in the sm_80 tensor-core kernel: the same tolerance.
  check_close(as_doubles(out), r.out64, {1.5e-2, 1.5e-2}, "out");
  check_lse(lse, r.lse64);
}

}  // namespace

TEST_CASE("emulated Hopper forward matches the cpu path: no mask, tiles cut by the sequence ends") {
  run_sm90_case<64>({.b = 1, .h = 2, .tq = 200, .tk = 300}, 11);
  run_sm90_case<128>({.b = 2, .h = 1, .tq = 130, .tk = 129}, 12);
}

TEST_CASE("emulated Hopper forward matches the cpu path: causal with Tq = Tk, Tq < Tk and Tq > Tk") {
  run_sm90_case<128>({.b = 1, .h = 2, .tq = 300, .tk = 300, .causal = true}, 13);
  run_sm90_case<64>({.b = 2, .h = 1, .tq = 70, .tk = 260, .causal = true}, 14);
  run_sm90_case<64>({.b = 1, .h = 1, .tq = 140, .tk = 60, .causal = true}, 15);  // early queries see no key
}

TEST_CASE("emulated Hopper forward matches the cpu path: padding mask, fully padded row, key lengths") {
  run_sm90_case<64>({.b = 3, .h = 1, .tq = 150, .tk = 140, .mask = true}, 16);
  run_sm90_case<128>({.b = 2, .h = 2, .tq = 90, .tk = 200, .causal = true, .lengths = true}, 17);
}

TEST_CASE("emulated Hopper forward matches the cpu path: ALiBi and relative scores inside the kernel") {
  run_sm90_case<64>({.b = 2, .h = 2, .tq = 150, .tk = 150, .causal = true, .terms = true, .value_terms = false}, 18);
  run_sm90_case<128>({.b = 1, .h = 2, .tq = 60, .tk = 190, .mask = true, .terms = true, .value_terms = false}, 19);
  run_sm90_case<64>({.b = 1, .h = 3, .tq = 200, .tk = 200, .causal = true, .terms = true, .score_buckets = false,
                     .value_terms = false},
                    20);  // ALiBi alone
}

TEST_CASE("emulated Hopper forward matches the cpu path: dropout drops the weights the core's dropout drops") {
  // The CPU path draws the mask of attnlab::dropout on the [B, H, Tq, Tk] weights (flash_dropout.h).
  run_sm90_case<64>({.b = 1, .h = 2, .tq = 150, .tk = 200, .causal = true, .dropout = 0.2}, 21);
  run_sm90_case<128>({.b = 2, .h = 1, .tq = 60, .tk = 140, .mask = true, .dropout = 0.1, .terms = true,
                      .value_terms = false},
                     22);
}

TEST_CASE("emulated Hopper forward matches the cpu path: relative positions' bucket values") {
  // Inner buckets across the 128-key tiles and the 128-query blocks, both clipped runs, the
  // queries' positions shifted by Tk - Tq, keys no row sees, and clip 0 (one bucket for all keys).
  run_sm90_case<64>({.b = 1, .h = 2, .tq = 200, .tk = 200, .causal = true, .terms = true}, 23);
  run_sm90_case<128>({.b = 2, .h = 1, .tq = 60, .tk = 190, .mask = true, .terms = true, .value_clip = 40}, 24);
  run_sm90_case<64>({.b = 1, .h = 1, .tq = 140, .tk = 60, .causal = true, .lengths = true, .terms = true,
                     .score_buckets = false, .value_clip = 0},
                    25);
  // With dropout: a dropped weight drops its bucket value too.
  run_sm90_case<64>({.b = 1, .h = 2, .tq = 150, .tk = 170, .dropout = 0.2, .terms = true, .value_clip = 60}, 26);
}

TEST_CASE("the Hopper blocks with bucket values run where the device holds them") {
  // The kernel choice tests' Hopper blocks (support/flash_kernel_blocks.h) are the kernels' own.
  namespace fc = attnlab::flash::cuda;
  namespace fkb = flash_kernel_blocks;
  for (int i = 0; i < 2; ++i) {
    CHECK(fkb::kHopperForward[i] == static_cast<std::size_t>(i == 0 ? sm90::Tiles<64>::smem_bytes
                                                                    : sm90::Tiles<128>::smem_bytes));
    CHECK(fkb::kHopperBackward[i] == static_cast<std::size_t>(i == 0 ? sm90::BackwardTiles<64>::smem_bytes
                                                                     : sm90::BackwardTiles<128>::smem_bytes));
  }
  // The forward's block and the backward's dQ block hold a float per query and value bucket
  // besides their tiles: on an H100 (227 KiB) clip 16 fits at both head sizes, clip 80 at d 64
  // (forward 81 + 80.5 KiB, dQ 65 + 80.5) and at d 128 only in the backward (forward 161 + 80.5
  // KiB, dQ 129 + 80.5); no block runs on an A100.
  alignas(16) static const std::uint16_t buffer[16] = {};
  const fc::DeviceLimits h100{9, 0, 227 * 1024}, a100{8, 0, 163 * 1024};
  const fc::BuiltKernels built = fkb::blocks(true, true);
  fc::Problem wide;
  wide.element = fc::Element::bf16;
  wide.tq = 2;
  wide.q = wide.k = wide.v = buffer;
  wide.bucket_values = buffer;
  const auto hopper = [&](const fc::DeviceLimits& d, fc::Pass pass) {
    const fc::KernelChoice c = fc::choose_kernel(d, built, wide, pass, {buffer});
    return c.kernel == fc::Kernel::hopper;
  };
  for (std::int64_t d : {64, 128}) {
    wide.dk = wide.dv = d;
    wide.value_clip = 16;
    CHECK(hopper(h100, fc::Pass::forward));
    CHECK(hopper(h100, fc::Pass::backward));
    CHECK_FALSE(hopper(a100, fc::Pass::forward));
    CHECK_FALSE(hopper(a100, fc::Pass::backward));
    wide.value_clip = 80;
    CHECK(hopper(h100, fc::Pass::forward) == (d == 64));
    CHECK(hopper(h100, fc::Pass::backward));
  }
}
