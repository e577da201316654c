// The device code of the flash CUDA kernels (forward, delta, dq, dk/dv, key lengths), run on host
// threads by support/cuda_host_emulation.h, against the CPU path of flash_attention in f64: f32
// and bf16 elements, tiles cut by the sequence ends, padding masks and key lengths, causal
// masking with Tq = Tk, Tq < Tk (one decoding step) and Tq > Tk, fully padded batch rows,
// dropout, position terms in kernel form (with their gradients), and head sizes from 16 to 128
// with d_k != d_v. The tensor-core bf16 kernels (flash_tc_*.cuh, with the emulated nvcuda::wmma)
// run the same way at head sizes 64 and 128 in every pairing, with sequence lengths that are not
// multiples of their 64-row tiles. These runs
// check the kernels' arithmetic, shared-memory layout and synchronisation where no GPU exists
// (each run in thread order, in reverse and in a shuffle of every block's threads, the same bits
// from all three: emulation_orders.h); tests/cuda runs the kernels themselves where one does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "attnlab/attnlab.h"
#include "flash_attention.h"
#include "flash_attention_cuda.h"
#include "flash_attention_kernels.h"
#include "flash_head_sizes.h"
#include "flash_kernel_choice.h"
#include "support/flash_kernel_blocks.h"
#include "support/tensor_testing.h"
// After every other header: the emulation defines CUDA's keywords as macros.
#include "support/cuda_host_emulation.h"
#include "flash_backward_kernels.cuh"
#include "flash_forward_kernels.cuh"
#include "flash_tc_backward_kernels.cuh"
#include "flash_tc_forward_kernels.cuh"
#include "support/emulation_orders.h"
#include "support/flash_emulated_cases.h"

namespace attnlab::flash::cuda::kernels {
// Dynamic shared memory of every emulated block (blocks run one at a time): 256 KiB, more than
// the largest kernel (dkdv_kernel at d_k = d_v = 128) asks.
float smem[1 << 16];
static_assert(dkdv_smem_floats<128, 128>() <= (1 << 16) && dq_smem_floats<128, 128>() <= (1 << 16) &&
              forward_smem_floats<128, 128>() <= (1 << 16));
}  // namespace attnlab::flash::cuda::kernels

namespace attnlab::flash::cuda::tc {
// The tensor-core kernels' dynamic shared memory (blocks run one at a time), 128-byte aligned as
// their declaration asks.
alignas(128) unsigned char tc_smem[160 * 1024];
static_assert(ForwardSmem<128, 128>::bytes <= sizeof tc_smem && DqSmem<128, 128>::bytes <= sizeof tc_smem &&
              DkdvSmem<128, 128>::bytes <= sizeof tc_smem);
}  // namespace attnlab::flash::cuda::tc

using namespace attnlab;
namespace k = attnlab::flash::cuda::kernels;
namespace tc = attnlab::flash::cuda::tc;
namespace emu = cuda_host_emulation;
using namespace flash_emulated_cases;

namespace {

template <typename T, int DK, int DV>
void run_case(const Case& c, std::uint64_t seed) {
  const bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  INFO("element ", bf16 ? "bf16" : "f32", " B ", c.b, " H ", c.h, " Tq ", c.tq, " Tk ", c.tk, " d_k ", DK, " d_v ", DV,
       " causal ", c.causal, " mask ", c.mask, " lengths ", c.lengths, " dropout ", c.dropout, " terms ", c.terms);
  const auto r = prepare<T, DK, DV>(c, seed);
  const T* mask_ptr = r.mask_ptr();
  const std::int32_t* lengths_ptr = r.lengths_ptr();
  const auto& q = r.q;
  const auto& kk = r.k;
  const auto& v = r.v;
  const auto& dout = r.dout;
  const auto drop = r.drop;
  const float scale = r.scale;

  const k::Grid gq = k::query_tile_grid(c.b * c.h, c.tq);
  const k::Inputs<T> in{q.device.data(), kk.device.data(), v.device.data(), mask_ptr, lengths_ptr, c.h, c.tq, c.tk,
                        c.causal, scale, drop, r.terms(c.tq, c.tk), {}};
  // The forward and backward kernels, in every order of a block's threads.
  const auto [out, lse, dq, dk, dv, d_scores, d_values] = emu::in_every_thread_order([&] {
    std::vector<T> out(static_cast<std::size_t>(c.b * c.h * c.tq * DV));
    std::vector<float> lse(static_cast<std::size_t>(c.b * c.h * c.tq));
    emu::launch(dim3(gq.x, gq.y), k::kThreads, [&] { k::forward_kernel<T, DK, DV>(in, out.data(), lse.data()); });
    // Backward, from the kernel's own out and lse (as on the device).
    std::vector<float> delta(static_cast<std::size_t>(c.b * c.h * c.tq));
    const k::Grid gd = k::delta_grid(c.b * c.h * c.tq);
    emu::launch(dim3(gd.x, gd.y), k::kThreads, [&] {
      k::delta_kernel<T>(out.data(), dout.device.data(), c.b * c.h * c.tq, DV, delta.data());
    });
    std::vector<T> dq(q.device.size()), dk(kk.device.size()), dv(v.device.size());
    std::vector<T> d_scores(r.bucket_scores.device.size()), d_values(r.bucket_values.device.size());
    const k::BackwardInputs<T> bin{in, dout.device.data(), lse.data(), delta.data()};
    emu::launch(dim3(gq.x, gq.y), k::kThreads,
                [&] { k::dq_kernel<T, DK, DV>(bin, dq.data(), c.terms ? d_scores.data() : nullptr); });
    const k::Grid gk = k::key_tile_grid(c.b * c.h, c.tk);
    const std::int64_t blocks = static_cast<std::int64_t>(gk.x) * gk.y;
    std::vector<float> shares(static_cast<std::size_t>(blocks) * d_values.size(), std::nanf(""));
    emu::launch(dim3(gk.x, gk.y), k::kThreads, [&] {
      k::dkdv_kernel<T, DK, DV>(bin, dk.data(), dv.data(), c.terms ? shares.data() : nullptr);
    });
    if (c.terms) {
      const auto n = static_cast<std::int64_t>(d_values.size());
      emu::launch(dim3(static_cast<unsigned>((n + k::kThreads - 1) / k::kThreads), 1), k::kThreads, [&] {
        k::bucket_values_grad_kernel<T>(shares.data(), blocks, n, d_values.data());
      });
    }
    return std::tuple(out, lse, dq, dk, dv, d_scores, d_values);
  });
  const testing::Tolerance out_tol = bf16 ? testing::Tolerance{1e-2, 1e-2} : testing::Tolerance{2e-6, 2e-5};
  check_close(as_doubles(out), r.out64, out_tol, "out");
  check_lse(lse, r.lse64);
  // bf16 gradients come from the bf16-rounded out (D = dout . out), as on the device: looser.
  const testing::Tolerance grad_tol = bf16 ? testing::Tolerance{3e-2, 3e-2} : testing::Tolerance{1e-5, 1e-4};
  check_close(as_doubles(dq), r.dq64, grad_tol, "dq");
  check_close(as_doubles(dk), r.dk64, grad_tol, "dk");
  check_close(as_doubles(dv), r.dv64, grad_tol, "dv");
  if (c.terms) {
    // Sums over many pairs: a little looser in f32.
    const testing::Tolerance sum_tol = bf16 ? grad_tol : testing::Tolerance{1e-5, 2e-4};
    check_close(as_doubles(d_scores), r.d_scores64, sum_tol, "d bucket scores");
    check_close(as_doubles(d_values), r.d_values64, sum_tol, "d bucket values");
  }
}


// The tensor-core kernels (bf16) on a case, against the same CPU reference as the FMA kernels.
template <int DK, int DV>
void run_tc_case(const Case& c, std::uint64_t seed) {
  using T = __nv_bfloat16;
  INFO("tensor cores: B ", c.b, " H ", c.h, " Tq ", c.tq, " Tk ", c.tk, " d_k ", DK, " d_v ", DV, " causal ", c.causal,
       " mask ", c.mask, " lengths ", c.lengths, " dropout ", c.dropout, " alibi ", c.terms);
  const auto r = prepare<T, DK, DV>(c, seed);
  const k::Grid gq = tc::query_tile_grid(c.b * c.h, c.tq);
  REQUIRE(!(c.terms && (c.score_buckets || c.value_terms)));  // ALiBi is the one term they apply
  const k::Inputs<T> in{r.q.device.data(), r.k.device.data(), r.v.device.data(), r.mask_ptr(), r.lengths_ptr(),
                        c.h, c.tq, c.tk, c.causal, r.scale, r.drop, r.terms(c.tq, c.tk), {}};
  const auto [out, lse, dq, dk, dv] = emu::in_every_thread_order([&] {
    std::vector<T> out(static_cast<std::size_t>(c.b * c.h * c.tq * DV));
    std::vector<float> lse(static_cast<std::size_t>(c.b * c.h * c.tq));
    emu::launch(dim3(gq.x, gq.y), tc::kThreads, [&] { tc::forward_kernel<DK, DV>(in, out.data(), lse.data()); });
    // Backward from the kernel's own out and lse, D from the FMA path's delta kernel (as on the device).
    std::vector<float> delta(static_cast<std::size_t>(c.b * c.h * c.tq));
    const k::Grid gd = k::delta_grid(c.b * c.h * c.tq);
    emu::launch(dim3(gd.x, gd.y), k::kThreads,
                [&] { k::delta_kernel<T>(out.data(), r.dout.device.data(), c.b * c.h * c.tq, DV, delta.data()); });
    std::vector<T> dq(r.q.device.size()), dk(r.k.device.size()), dv(r.v.device.size());
    const k::BackwardInputs<T> bin{in, r.dout.device.data(), lse.data(), delta.data()};
    emu::launch(dim3(gq.x, gq.y), tc::kThreads, [&] { tc::dq_kernel<DK, DV>(bin, dq.data()); });
    const k::Grid gk = tc::key_tile_grid(c.b * c.h, c.tk);
    emu::launch(dim3(gk.x, gk.y), tc::kThreads, [&] { tc::dkdv_kernel<DK, DV>(bin, dk.data(), dv.data()); });
    return std::tuple(out, lse, dq, dk, dv);
  });
  // P enters P V in bf16: a little looser than the FMA kernels' bf16 output.
  check_close(as_doubles(out), r.out64, {1.5e-2, 1.5e-2}, "out");
  check_lse(lse, r.lse64);
  // dS and P Z enter their products in bf16: as loose as the FMA kernels' bf16 gradients.
  const testing::Tolerance grad_tol{3e-2, 3e-2};
  check_close(as_doubles(dq), r.dq64, grad_tol, "dq");
  check_close(as_doubles(dk), r.dk64, grad_tol, "dk");
  check_close(as_doubles(dv), r.dv64, grad_tol, "dv");
}
template <int DK, int DV>
void run_both(const Case& c, std::uint64_t seed) {
  run_case<float, DK, DV>(c, seed);
  run_case<__nv_bfloat16, DK, DV>(c, seed);
}

}  // namespace

TEST_CASE("emulated flash kernels match the cpu path without masks") {
  run_both<16, 32>({.b = 2, .h = 2, .tq = 37, .tk = 45}, 1);
}

TEST_CASE("emulated flash kernels match the cpu path with a padding mask and a fully padded row") {
  run_both<32, 16>({.b = 3, .h = 2, .tq = 35, .tk = 70, .mask = true}, 2);
}

TEST_CASE("emulated flash kernels match the cpu path with causal self-attention") {
  run_both<32, 32>({.b = 2, .h = 1, .tq = 40, .tk = 40, .causal = true, .mask = true}, 3);
}

TEST_CASE("emulated flash kernels match the cpu path for one decoding step against a cache") {
  run_both<64, 16>({.b = 2, .h = 2, .tq = 1, .tk = 70, .causal = true, .mask = true}, 4);
}

TEST_CASE("emulated flash kernels match the cpu path when queries outnumber keys under causal masking") {
  run_both<16, 16>({.b = 1, .h = 2, .tq = 50, .tk = 20, .causal = true}, 5);
}

TEST_CASE("emulated flash kernels match the cpu path with dropout and key lengths") {
  run_both<32, 64>({.b = 2, .h = 2, .tq = 33, .tk = 66, .causal = true, .lengths = true, .dropout = 0.3}, 6);
}

TEST_CASE("emulated flash kernels match the cpu path at head size 128") {
  run_both<128, 128>({.b = 1, .h = 1, .tq = 5, .tk = 9, .mask = true, .dropout = 0.1}, 7);
}

TEST_CASE("emulated flash kernels match the cpu path with position terms, causal and padded") {
  run_both<32, 16>({.b = 3, .h = 2, .tq = 40, .tk = 70, .causal = true, .mask = true, .terms = true}, 8);
}

TEST_CASE("emulated flash kernels match the cpu path with position terms, dropout and key lengths") {
  run_both<16, 32>({.b = 2, .h = 3, .tq = 37, .tk = 37, .lengths = true, .dropout = 0.2, .terms = true}, 9);
}

TEST_CASE("emulated flash kernels match the cpu path with position terms for one decoding step") {
  run_both<64, 64>({.b = 2, .h = 1, .tq = 1, .tk = 45, .causal = true, .mask = true, .terms = true}, 10);
}

TEST_CASE("emulated tensor core flash kernels match the cpu path with padding and a fully padded row") {
  run_tc_case<64, 64>({.b = 3, .h = 1, .tq = 70, .tk = 75, .mask = true}, 11);
}

TEST_CASE("emulated tensor core flash kernels match the cpu path with causal self-attention") {
  run_tc_case<64, 128>({.b = 1, .h = 2, .tq = 90, .tk = 90, .causal = true, .mask = true}, 12);
}

TEST_CASE("emulated tensor core flash kernels match the cpu path with causal masking and fewer queries than keys") {
  run_tc_case<128, 64>({.b = 2, .h = 1, .tq = 20, .tk = 83, .causal = true, .mask = true}, 13);
}

TEST_CASE("emulated tensor core flash kernels match the cpu path with dropout and key lengths") {
  run_tc_case<128, 128>({.b = 2, .h = 1, .tq = 67, .tk = 71, .causal = true, .lengths = true, .dropout = 0.3}, 14);
}

TEST_CASE("emulated tensor core flash kernels match the cpu path when queries outnumber keys") {
  run_tc_case<64, 64>({.b = 1, .h = 1, .tq = 66, .tk = 17, .causal = true}, 15);
}

TEST_CASE("emulated tensor core flash kernels match the cpu path with ALiBi's bias forward and backward") {
  const Case alibi{.b = 2, .h = 2, .tq = 90, .tk = 130, .causal = true, .mask = true, .terms = true,
                   .score_buckets = false, .value_terms = false};
  run_tc_case<64, 64>(alibi, 16);
  run_tc_case<128, 128>({.b = 1, .h = 3, .tq = 70, .tk = 70, .lengths = true, .terms = true, .score_buckets = false,
                         .value_terms = false},
                        17);
}

TEST_CASE("the kernel choice tests hand choose_kernel the tensor-core kernels' own blocks") {
  // support/flash_kernel_blocks.h, against the layouts: the forward's block, and the larger of the
  // backward's two, at every pairing of 64 and 128.
  namespace fkb = flash_kernel_blocks;
  const auto check_pair = [](auto dk, auto dv) {
    constexpr int DK = decltype(dk)::value, DV = decltype(dv)::value;
    const int i = attnlab::flash::cuda::MmaHeadSizes::index(DK), j = attnlab::flash::cuda::MmaHeadSizes::index(DV);
    CHECK(fkb::kTcForward[i][j] == static_cast<std::size_t>(tc::ForwardSmem<DK, DV>::bytes));
    CHECK(fkb::kTcBackward[i][j] ==
          static_cast<std::size_t>(std::max(tc::DqSmem<DK, DV>::bytes, tc::DkdvSmem<DK, DV>::bytes)));
    return 0;
  };
  attnlab::flash::cuda::MmaHeadSizes::with(64, 64, 0, check_pair);
  attnlab::flash::cuda::MmaHeadSizes::with(64, 128, 0, check_pair);
  attnlab::flash::cuda::MmaHeadSizes::with(128, 64, 0, check_pair);
  attnlab::flash::cuda::MmaHeadSizes::with(128, 128, 0, check_pair);
  // The FMA kernels that take over where a tensor-core block does not fit fit the smallest device
  // of sm_80 and newer (sm_86's 99 KiB) at every head size (without position terms), so no such
  // device is left without a kernel.
  CHECK(std::max({k::forward_smem_floats<128, 128>(), k::dq_smem_floats<128, 128>(), k::dkdv_smem_floats<128, 128>()}) *
            sizeof(float) <=
        99 * 1024);
}

TEST_CASE("the emulated wmma follows the documented layouts of loads stores and products") {
  namespace wmma = nvcuda::wmma;
  // A [16 x 16] and B [16 x 16] of small integers (exact in bf16 and in f32 sums), with row
  // strides (ldm) larger than the tile: A row-major (a(r, c) at r * 24 + c), B column-major
  // (b(r, c) at r + c * 24), C row-major with ldm 20; the product is stored column-major.
  alignas(32) static __nv_bfloat16 a[16 * 24], b[16 * 24];
  alignas(32) static float c[16 * 20], d[16 * 16 + 8];
  auto av = [](int r, int k) { return static_cast<float>((r * 3 + k * 5) % 7 - 3); };
  auto bv = [](int k, int n) { return static_cast<float>((k * 2 + n * 7) % 5 - 2); };
  auto cv = [](int r, int n) { return static_cast<float>(r - n); };
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) {
      a[r * 24 + k] = __float2bfloat16_rn(av(r, k));
      b[r + k * 24] = __float2bfloat16_rn(bv(r, k));
      c[r * 20 + k] = cv(r, k);
    }
  emu::launch(dim3(1), 32, [&] {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(fa, a, 24);
    wmma::load_matrix_sync(fb, b, 24);
    wmma::load_matrix_sync(acc, c, 20, wmma::mem_row_major);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_col_major);
    __syncwarp();
  });
  int wrong = 0;
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float want = cv(r, n);
      for (int k = 0; k < 16; ++k) want += av(r, k) * bv(k, n);
      wrong += d[r + n * 16] != want;
    }
  CHECK(wrong == 0);
}
