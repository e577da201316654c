// The device code of the flash CUDA kernels (forward, delta, dq, dk/dv, key lengths), run on host
// threads by support/cuda_host_emulation.h, against the CPU path of flash_attention in f64: f32
// and bf16 elements, tiles cut by the sequence ends, padding masks and key lengths, causal
// masking with Tq = Tk, Tq < Tk (one decoding step) and Tq > Tk, fully padded batch rows,
// dropout, position terms in kernel form (with their gradients), and head sizes from 16 to 128
// with d_k != d_v. The tensor-core bf16 kernels (flash_tc_*.cuh, with the emulated nvcuda::wmma)
// run the same way at head sizes 64 and 128 in every pairing, with sequence lengths that are not
// multiples of their 64-row tiles. These runs
// check the kernels' arithmetic, shared-memory layout and synchronisation where no GPU exists;
// tests/cuda runs the kernels themselves where one does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/attnlab.h"
#include "flash_attention.h"
#include "flash_attention_cuda.h"
#include "flash_attention_kernels.h"
#include "flash_kernel_report.h"
#include "flash_sm90.h"
#include "support/tensor_testing.h"
// After every other header: the emulation defines CUDA's keywords as macros.
#include "support/cuda_host_emulation.h"
#include "flash_backward_kernels.cuh"
#include "flash_forward_kernels.cuh"
#include "flash_tc_backward_kernels.cuh"
#include "flash_tc_forward_kernels.cuh"
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

  // Forward.
  std::vector<T> out(static_cast<std::size_t>(c.b * c.h * c.tq * DV));
  std::vector<float> lse(static_cast<std::size_t>(c.b * c.h * c.tq));
  const k::Grid gq = k::query_tile_grid(c.b * c.h, c.tq);
  const k::Inputs<T> in{q.device.data(), kk.device.data(), v.device.data(), mask_ptr, lengths_ptr, c.h, c.tq, c.tk,
                        c.causal, scale, drop, r.terms(c.tq, c.tk)};
  emu::launch(dim3(gq.x, gq.y), k::kThreads, [&] { k::forward_kernel<T, DK, DV>(in, out.data(), lse.data()); });
  const testing::Tolerance out_tol = bf16 ? testing::Tolerance{1e-2, 1e-2} : testing::Tolerance{2e-6, 2e-5};
  check_close(as_doubles(out), r.out64, out_tol, "out");
  check_lse(lse, r.lse64);
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
  std::vector<T> out(static_cast<std::size_t>(c.b * c.h * c.tq * DV));
  std::vector<float> lse(static_cast<std::size_t>(c.b * c.h * c.tq));
  const k::Grid gq = tc::query_tile_grid(c.b * c.h, c.tq);
  REQUIRE(!(c.terms && (c.score_buckets || c.value_terms)));  // ALiBi is the one term they apply
  const k::Inputs<T> in{r.q.device.data(), r.k.device.data(), r.v.device.data(), r.mask_ptr(), r.lengths_ptr(),
                        c.h, c.tq, c.tk, c.causal, r.scale, r.drop, r.terms(c.tq, c.tk)};
  emu::launch(dim3(gq.x, gq.y), tc::kThreads, [&] { tc::forward_kernel<DK, DV>(in, out.data(), lse.data()); });
  // P enters P V in bf16: a little looser than the FMA kernels' bf16 output.
  check_close(as_doubles(out), r.out64, {1.5e-2, 1.5e-2}, "out");
  check_lse(lse, r.lse64);

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

TEST_CASE("the tensor core kernels take bf16 at head sizes 64 and 128 with more than one query") {
  namespace fc = attnlab::flash::cuda;
  alignas(16) static std::uint16_t buffer[64];
  fc::Problem p;
  p.element = fc::Element::bf16;
  p.dk = 64;
  p.dv = 128;
  p.tq = 2;
  p.q = p.k = p.v = buffer;
  CHECK(fc::uses_tensor_cores(p, {buffer + 8}));
  CHECK_FALSE(fc::uses_tensor_cores(p, {buffer + 1}));  // an output not 16-byte aligned
  fc::Problem misaligned = p;
  misaligned.k = buffer + 4;
  CHECK_FALSE(fc::uses_tensor_cores(misaligned));
  fc::Problem step = p;
  step.tq = 1;  // one decoding step: the FMA kernel
  CHECK_FALSE(fc::uses_tensor_cores(step));
  fc::Problem f32 = p;
  f32.element = fc::Element::f32;
  CHECK_FALSE(fc::uses_tensor_cores(f32));
  for (std::int64_t d : {16, 32}) {
    fc::Problem other = p;
    other.dk = d;
    CHECK_FALSE(fc::uses_tensor_cores(other));
    other = p;
    other.dv = d;
    CHECK_FALSE(fc::uses_tensor_cores(other));
  }
  // ALiBi's slopes they apply; bucketed terms go to the FMA kernels. The Hopper kernels, forward
  // and backward, take bucket scores, bucket values and dropout too, not d_k != d_v.
  static const float slopes[2] = {0.5f, 0.25f};
  fc::Problem alibi = p, scores = p, values = p;
  alibi.slopes = scores.slopes = values.slopes = slopes;
  scores.bucket_scores = buffer;
  values.bucket_values = buffer;
  CHECK(fc::uses_tensor_cores(alibi));
  CHECK_FALSE(fc::uses_tensor_cores(scores));
  CHECK_FALSE(fc::uses_tensor_cores(values));
  alibi.dv = scores.dv = values.dv = 64;
  CHECK(fc::sm90_takes_problem(alibi, buffer + 8));
  CHECK(fc::sm90_takes_problem(scores, buffer + 8));
  CHECK(fc::sm90_takes_problem(values, buffer + 8));
  CHECK_FALSE(fc::sm90_takes_problem(p, buffer + 8));  // d_k 64, d_v 128
  fc::Problem dropped = alibi;
  dropped.dropout = 0.1;
  CHECK(fc::sm90_takes_problem(dropped, buffer + 8));
  CHECK(fc::sm90_takes_backward(alibi, {buffer + 8}));
  CHECK(fc::sm90_takes_backward(scores, {buffer + 8}));
  CHECK(fc::sm90_takes_backward(values, {buffer + 8}));
  CHECK_FALSE(fc::sm90_takes_backward(p, {buffer + 8}));
  CHECK(fc::sm90_takes_backward(dropped, {buffer + 8}));
  fc::Problem dropped_values = values;
  dropped_values.dropout = 0.1;
  CHECK(fc::sm90_takes_problem(dropped_values, buffer + 8));
  CHECK(fc::sm90_takes_backward(dropped_values, {buffer + 8}));
  // Their blocks' room for bucket values: tests/flash_sm90 (built with the Hopper kernels).
  CHECK(fc::sm90_value_smem(values) == 128 * (2 * values.value_clip + 1) * sizeof(float));
  CHECK(fc::sm90_value_smem(alibi) == 0);
  // The backward's scratch: u per query and bucket, then a share (buckets x d_v) per dQ block
  // of 128 queries.
  fc::Problem scratch = values;
  scratch.batch = 2;
  scratch.heads = 3;
  scratch.tq = 300;
  scratch.value_clip = 4;
  CHECK(fc::sm90_value_scratch_floats(scratch) == 2 * 3 * 300 * 9 + 2 * 3 * 3 * 9 * 64);
  CHECK(fc::sm90_value_scratch_floats(alibi) == 0);
  CHECK_FALSE(fc::sm90_takes_backward(alibi, {buffer + 1}));  // a gradient not 16-byte aligned
}

TEST_CASE("the tensor core kernels run where the device is sm_80 or newer and holds their blocks") {
  namespace fc = attnlab::flash::cuda;
  const fc::DeviceLimits h100{9, 0, 227 * 1024}, a100{8, 0, 163 * 1024}, rtx3090{8, 6, 99 * 1024},
      t4{7, 5, 64 * 1024}, unknown{};
  // Each kernel's own block, at the largest and the smallest head sizes.
  const std::size_t big = std::max({tc::ForwardSmem<128, 128>::bytes, tc::DqSmem<128, 128>::bytes,
                                    tc::DkdvSmem<128, 128>::bytes});
  const std::size_t small = std::max({tc::ForwardSmem<64, 64>::bytes, tc::DqSmem<64, 64>::bytes,
                                      tc::DkdvSmem<64, 64>::bytes});
  CAPTURE(big);
  CAPTURE(small);
  CHECK(fc::device_takes_tensor_cores(h100, big));
  CHECK(fc::device_takes_tensor_cores(a100, big));
  CHECK_FALSE(fc::device_takes_tensor_cores(rtx3090, big));  // 99 KiB: d 128 goes to the FMA kernels
  CHECK(fc::device_takes_tensor_cores(rtx3090, small));
  CHECK_FALSE(fc::device_takes_tensor_cores(t4, small));  // no bf16 WMMA before sm_80
  CHECK_FALSE(fc::device_takes_tensor_cores(unknown, small));
  // The FMA kernels that take over fit the smallest of these devices at every head size (without
  // position terms), so no device of sm_80 and newer is left without a kernel.
  CHECK(std::max({k::forward_smem_floats<128, 128>(), k::dq_smem_floats<128, 128>(), k::dkdv_smem_floats<128, 128>()}) *
            sizeof(float) <=
        rtx3090.smem_optin);
}

TEST_CASE("attnlab plugins says which flash kernels each GPU runs, with the real block sizes") {
  namespace fc = attnlab::flash::cuda;
  const attnlab::flash::TensorCoreBlocks blocks[] = {
      {64, tc::ForwardSmem<64, 64>::bytes, std::max(tc::DqSmem<64, 64>::bytes, tc::DkdvSmem<64, 64>::bytes)},
      {128, tc::ForwardSmem<128, 128>::bytes, std::max(tc::DqSmem<128, 128>::bytes, tc::DkdvSmem<128, 128>::bytes)}};
  const auto line = [&](const fc::DeviceLimits& d) { return attnlab::flash::describe_cuda_kernels(d, blocks); };
  const std::string h100 = line({9, 0, 227 * 1024}), a100 = line({8, 0, 163 * 1024});
  const std::string rtx3090 = line({8, 6, 99 * 1024}), t4 = line({7, 5, 64 * 1024}), unknown = line({});
  CAPTURE(h100);
  CAPTURE(rtx3090);
  const std::string fma =
      "f32, other head sizes, bucketed position terms (relative) and single-query steps: FMA kernels";
  for (const std::string& l : {h100, a100}) {
    CHECK(l.find("bf16 d 64: tensor cores (WMMA), forward and backward") != std::string::npos);
    CHECK(l.find("bf16 d 128: tensor cores (WMMA), forward and backward") != std::string::npos);
    CHECK(l.find(fma) != std::string::npos);
  }
  CHECK(h100.find("Hopper's warpgroup MMA kernels are not in this build") != std::string::npos);
  CHECK(a100.find("Hopper") == std::string::npos);
  // The Hopper kernels: built but not asked for, asked for, and on a GPU of another generation.
  const attnlab::flash::HopperKernels built{true, false, 81 * 1024, 161 * 1024}, on{true, true, 81 * 1024, 161 * 1024};
  const fc::DeviceLimits h100_limits{9, 0, 227 * 1024};
  const std::string h100_built = attnlab::flash::describe_cuda_kernels(h100_limits, blocks, built);
  const std::string h100_on = attnlab::flash::describe_cuda_kernels(h100_limits, blocks, on);
  CAPTURE(h100_on);
  CHECK(h100_built.find("built but off until ATTNLAB_FLASH_SM90=1") != std::string::npos);
  CHECK(h100_on.find("bf16 at d 64 and 128 (d_k = d_v)") != std::string::npos);
  CHECK(h100_on.find("Hopper's warpgroup MMA (sm_90a, ATTNLAB_FLASH_SM90=1)") != std::string::npos);
  CHECK(h100_on.find("forward and backward with masks, dropout, ALiBi and relative positions") != std::string::npos);
  CHECK(attnlab::flash::describe_cuda_kernels({10, 0, 227 * 1024}, blocks, on).find("Hopper") == std::string::npos);
  // A device that gives less than the d 128 block (161 KiB) runs the Hopper kernels at d 64 only.
  CHECK(attnlab::flash::describe_cuda_kernels({9, 0, 100 * 1024}, blocks, on).find("bf16 at d 64 (") !=
        std::string::npos);
  // 99 KiB: d 64 fits, d 128 runs on the FMA kernels at least backward, and the line says why.
  CHECK(rtx3090.find("bf16 d 64: tensor cores (WMMA), forward and backward") != std::string::npos);
  CHECK(rtx3090.find("bf16 d 128: tensor cores (WMMA), forward and backward") == std::string::npos);
  CHECK(rtx3090.find("the GPU gives 99 KiB") != std::string::npos);
  CHECK(t4 == "sm_75 has no bf16 tensor-core MMA (sm_80 and newer): every problem on the FMA kernels");
  CHECK(unknown == "its limits could not be read: every problem on the FMA kernels");
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
