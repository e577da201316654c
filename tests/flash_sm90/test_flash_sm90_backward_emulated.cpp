// The Hopper flash backward's device code (plugins/attention/flash/flash_sm90_backward_kernels.cuh)
// run on host threads, its warpgroup MMAs and asynchronous copies emulated
// (support/cuda_sm90_host_emulation.h), against the CPU path of flash_attention in f64, from the
// Hopper forward's own out and lse and the FMA path's delta kernel, as on the device: query and key
// tiles cut by the sequence ends, several walked tiles in both stages, causal masking with Tq = Tk,
// Tq < Tk and Tq > Tk, padding masks with a fully padded batch row (whose key blocks write zeros),
// key lengths, ALiBi's distance bias, relative positions' bucket scores (whose gradient the dQ
// kernel writes) and bucket values (u from bucket_dots_kernel, their gradient from the dQ blocks'
// shares), dropout, head sizes 64 and 128. On a Hopper GPU the kernels are bench/gpu_checks.sh's
// sm90 phase.
#include <doctest/doctest.h>

#include <limits>

// First: CuTe, CUDA's host headers and the emulated threads and Hopper operations.
#include "support/cuda_sm90_host_emulation.h"
#include "flash_backward_kernels.cuh"
#include "flash_forward_kernels.cuh"
#include "flash_sm90_backward_kernels.cuh"
#include "flash_sm90_forward_kernel.cuh"
#include "support/flash_emulated_cases.h"
#include "emulated_sm90_forward.h"
#include "support/emulation_orders.h"

namespace {

using namespace flash_emulated_cases;

template <int D>
void run_backward_case(const Case& c, std::uint64_t seed) {
  using T = __nv_bfloat16;
  INFO("Hopper backward: B ", c.b, " H ", c.h, " Tq ", c.tq, " Tk ", c.tk, " d ", D, " causal ", c.causal, " mask ",
       c.mask, " lengths ", c.lengths, " terms ", c.terms, " bucket scores ", c.terms && c.score_buckets,
       " bucket values ", c.terms && c.value_terms, " value clip ", c.value_clip, " dropout ", c.dropout);
  const auto r = prepare<T, D, D>(c, seed);
  const k::Inputs<T> in = sm90_inputs<D>(c, r);
  const bool buckets = c.terms && c.score_buckets, values = c.terms && c.value_terms;
  // Forward and backward in every order of a block's threads.
  const auto [out, lse, dq, dk, dv, d_scores, d_values] = emu::in_every_thread_order([&] {
    std::vector<T> out;
    std::vector<float> lse;
    run_sm90_forward<D>(c, in, out, lse);
    const std::int64_t rows = c.b * c.h * c.tq;
    std::vector<float> delta(static_cast<std::size_t>(rows));
    const k::Grid gd = k::delta_grid(rows);
    emu::launch(dim3(gd.x, gd.y), k::kThreads,
                [&] { k::delta_kernel<T>(out.data(), r.dout.device.data(), rows, D, delta.data()); });

    // Sentinels: every element of the gradients must be written (padded key blocks included).
    const T sentinel = __float2bfloat16_rn(1e4f);
    std::vector<T> dq(r.q.device.size(), sentinel), dk(r.k.device.size(), sentinel), dv(r.v.device.size(), sentinel);
    // The bucket scores' gradient starts zeroed, as the launcher leaves it.
    std::vector<T> d_scores(buckets ? r.bucket_scores.device.size() : 0, __float2bfloat16_rn(0.0f));
    T* const d_scores_ptr = buckets ? d_scores.data() : nullptr;
    const k::BackwardInputs<T> bin{in, r.dout.device.data(), lse.data(), delta.data()};
    const bool extras = sm90_extras(c);
    // With bucket values, as the launcher: u = dout . V^T, then each dQ block's share of their
    // gradient (NaN until written), added up in block order by the FMA path's kernel.
    const std::int64_t value_buckets = 2 * c.value_clip + 1;
    const dim3 query_grid = sm90_grid(c, c.tq);
    std::vector<float> u(values ? static_cast<std::size_t>(rows * value_buckets) : 0);
    std::vector<float> shares(values ? static_cast<std::size_t>(query_grid.x * query_grid.y * value_buckets * D) : 0,
                              std::numeric_limits<float>::quiet_NaN());
    if (values)
      emu::launch(dim3(gd.x, gd.y), k::kThreads, [&] {
        sm90::bucket_dots_kernel<D>(r.dout.device.data(), r.bucket_values.device.data(), rows,
                                    static_cast<int>(value_buckets), u.data());
      });
    emu::launch(query_grid, sm90::kThreads, [&] {
      if (values) sm90::dq_kernel<D, true, true>(bin, dq.data(), d_scores_ptr, u.data(), shares.data());
      else if (extras) sm90::dq_kernel<D, true, false>(bin, dq.data(), d_scores_ptr);
      else sm90::dq_kernel<D, false, false>(bin, dq.data(), d_scores_ptr);
    });
    emu::launch(sm90_grid(c, c.tk), sm90::kThreads, [&] {
      if (values) sm90::dkdv_kernel<D, true, true>(bin, dk.data(), dv.data(), u.data());
      else if (extras) sm90::dkdv_kernel<D, true, false>(bin, dk.data(), dv.data());
      else sm90::dkdv_kernel<D, false, false>(bin, dk.data(), dv.data());
    });
    std::vector<T> d_values(values ? r.bucket_values.device.size() : 0, sentinel);
    if (values)
      emu::launch(dim3(1), k::kThreads, [&] {
        k::bucket_values_grad_kernel<T>(shares.data(), query_grid.x * query_grid.y, value_buckets * D, d_values.data());
      });
    return std::tuple(out, lse, dq, dk, dv, d_scores, d_values);
  });
  // P and dS enter their products in bf16: the sm_80 tensor-core kernels' tolerance.
  const testing::Tolerance grad_tol{3e-2, 3e-2};
  check_close(as_doubles(dq), r.dq64, grad_tol, "dq");
  check_close(as_doubles(dk), r.dk64, grad_tol, "dk");
  check_close(as_doubles(dv), r.dv64, grad_tol, "dv");
  if (buckets) check_close(as_doubles(d_scores), r.d_scores64, grad_tol, "d_bucket_scores");
  if (values) check_close(as_doubles(d_values), r.d_values64, grad_tol, "d_bucket_values");
}

}  // namespace

TEST_CASE("emulated Hopper backward matches the cpu path: no mask, tiles cut by the sequence ends") {
  run_backward_case<64>({.b = 1, .h = 2, .tq = 200, .tk = 300}, 31);
  run_backward_case<128>({.b = 2, .h = 1, .tq = 130, .tk = 129}, 32);
}

TEST_CASE("emulated Hopper backward matches the cpu path: causal with Tq = Tk, Tq < Tk and Tq > Tk") {
  run_backward_case<128>({.b = 1, .h = 2, .tq = 300, .tk = 300, .causal = true}, 33);
  run_backward_case<64>({.b = 2, .h = 1, .tq = 70, .tk = 260, .causal = true}, 34);
  run_backward_case<64>({.b = 1, .h = 1, .tq = 140, .tk = 60, .causal = true}, 35);  // early queries see no key
}

TEST_CASE("emulated Hopper backward matches the cpu path: padding mask, fully padded row, key lengths") {
  run_backward_case<64>({.b = 3, .h = 1, .tq = 150, .tk = 300, .mask = true}, 36);
  run_backward_case<128>({.b = 2, .h = 2, .tq = 90, .tk = 200, .causal = true, .lengths = true}, 37);
}

TEST_CASE("emulated Hopper backward matches the cpu path: ALiBi inside the kernels") {
  const Case alibi{.b = 1, .h = 2, .tq = 140, .tk = 140, .causal = true, .terms = true, .score_buckets = false,
                   .value_terms = false};
  run_backward_case<64>(alibi, 38);
  run_backward_case<128>({.b = 2, .h = 2, .tq = 60, .tk = 190, .mask = true, .terms = true, .score_buckets = false,
                          .value_terms = false},
                         39);
}

TEST_CASE("emulated Hopper backward matches the cpu path: relative positions' bucket scores and their gradient") {
  // Both clipped buckets reached (keys far before and after each query), inner buckets straddling
  // the 64-key walked tiles and the 128-query blocks, Tq < Tk with causal and padding masks.
  run_backward_case<64>({.b = 1, .h = 1, .tq = 150, .tk = 150, .terms = true, .value_terms = false}, 40);
  run_backward_case<128>({.b = 2, .h = 1, .tq = 70, .tk = 200, .causal = true, .mask = true, .terms = true,
                          .value_terms = false},
                         41);
}

TEST_CASE("emulated Hopper backward matches the cpu path: dropout, alone and with relative positions") {
  run_backward_case<64>({.b = 1, .h = 1, .tq = 140, .tk = 140, .causal = true, .dropout = 0.2}, 43);
  run_backward_case<128>({.b = 1, .h = 1, .tq = 70, .tk = 150, .mask = true, .dropout = 0.1, .terms = true,
                          .value_terms = false},
                         44);
}

TEST_CASE("emulated Hopper backward matches the cpu path: relative positions' bucket values and their gradient") {
  // u at inner buckets across the 64-key walked tiles and the 128-query blocks and at both clipped
  // runs, from the dQ and the dK/dV kernels; the value gradient from several dQ blocks' shares;
  // the queries' positions shifted by Tk - Tq; clip 0 (one bucket for all keys); with dropout.
  run_backward_case<64>({.b = 1, .h = 1, .tq = 150, .tk = 150, .causal = true, .terms = true}, 45);
  run_backward_case<128>({.b = 1, .h = 1, .tq = 70, .tk = 200, .mask = true, .terms = true, .value_clip = 40}, 46);
  run_backward_case<64>({.b = 1, .h = 1, .tq = 140, .tk = 60, .causal = true, .lengths = true, .terms = true,
                         .score_buckets = false, .value_clip = 0},
                        47);
  run_backward_case<64>({.b = 1, .h = 1, .tq = 140, .tk = 170, .dropout = 0.2, .terms = true, .value_clip = 60}, 48);
}
