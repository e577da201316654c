// The device code of the flash CUDA kernels (forward, delta, dq, dk/dv, key lengths), run on host
// threads by support/cuda_host_emulation.h, against the CPU path of flash_attention in f64: f32
// and bf16 elements, tiles cut by the sequence ends, padding masks and key lengths, causal
// masking with Tq = Tk, Tq < Tk (one decoding step) and Tq > Tk, fully padded batch rows,
// dropout, and head sizes from 16 to 128 with d_k != d_v. These runs check the kernels'
// arithmetic, shared-memory layout and synchronisation where no GPU exists; tests/cuda runs the
// kernels themselves where one does.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/attnlab.h"
#include "flash_attention.h"
#include "flash_attention_kernels.h"
#include "support/tensor_testing.h"
// After every other header: the emulation defines CUDA's keywords as macros.
#include "support/cuda_host_emulation.h"
#include "flash_backward_kernels.cuh"
#include "flash_forward_kernels.cuh"

namespace attnlab::flash::cuda::kernels {
// Dynamic shared memory of every emulated block (blocks run one at a time): 256 KiB, more than
// the largest kernel (dkdv_kernel at d_k = d_v = 128) asks.
float smem[1 << 16];
static_assert(dkdv_smem_floats<128, 128>() <= (1 << 16) && dq_smem_floats<128, 128>() <= (1 << 16) &&
              forward_smem_floats<128, 128>() <= (1 << 16));
}  // namespace attnlab::flash::cuda::kernels

using namespace attnlab;
namespace k = attnlab::flash::cuda::kernels;
namespace emu = cuda_host_emulation;

namespace {

struct Case {
  std::int64_t b, h, tq, tk;
  bool causal = false;
  bool mask = false;     // additive mask, lengths derived from it by the key lengths kernel
  bool lengths = false;  // explicit key lengths instead of a mask
  double dropout = 0.0;
};

float to_f(float x) { return x; }
float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
T from_f(float x) {
  if constexpr (std::is_same_v<T, float>) return x;
  else return __float2bfloat16_rn(x);
}

// Values of an f64 tensor stored as T, and the f64 tensor of exactly the stored values.
template <typename T>
struct Stored {
  std::vector<T> device;
  Tensor reference;
};
template <typename T>
Stored<T> store(const Tensor& x) {
  Stored<T> s;
  std::vector<double> back;
  for (double v : x.to_vector<double>()) {
    s.device.push_back(from_f<T>(static_cast<float>(v)));
    back.push_back(static_cast<double>(to_f(s.device.back())));
  }
  s.reference = Tensor::from_vector<double>(x.shape(), back);
  return s;
}

// The mask of a case: batch row 0 padded from 3/4 of the keys and one interior key masked, row
// 1 without padding, row 2 (when B = 3) entirely padded.
Tensor make_mask(const Case& c) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> m(static_cast<std::size_t>(c.b * c.tk), 0.0);
  for (std::int64_t j = 0; j < c.tk; ++j) {
    if (j >= c.tk * 3 / 4 || j == 1) m[static_cast<std::size_t>(j)] = -inf;
    if (c.b > 2) m[static_cast<std::size_t>(2 * c.tk + j)] = -inf;
  }
  return Tensor::from_vector<double>({c.b, c.tk}, m);
}

std::vector<std::int32_t> make_lengths(const Case& c) {
  std::vector<std::int32_t> l;
  for (std::int64_t b = 0; b < c.b; ++b) l.push_back(static_cast<std::int32_t>(b == 0 ? c.tk / 2 : c.tk - b));
  return l;
}

template <typename T>
std::vector<double> as_doubles(const std::vector<T>& v) {
  std::vector<double> out;
  for (const T& x : v) out.push_back(static_cast<double>(to_f(x)));
  return out;
}

void check_close(const std::vector<double>& got, const Tensor& want, testing::Tolerance tol, const std::string& what) {
  const Tensor g = Tensor::from_vector<double>(want.shape(), got);
  const std::string m = testing::compare(g, want, tol);
  CHECK_MESSAGE(m.empty(), what, ": ", m);
}

template <typename T, int DK, int DV>
void run_case(const Case& c, std::uint64_t seed) {
  const bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  INFO("element ", bf16 ? "bf16" : "f32", " B ", c.b, " H ", c.h, " Tq ", c.tq, " Tk ", c.tk, " d_k ", DK, " d_v ", DV,
       " causal ", c.causal, " mask ", c.mask, " lengths ", c.lengths, " dropout ", c.dropout);
  auto q = store<T>(testing::random_tensor({c.b, c.h, c.tq, DK}, seed, -1.5, 1.5, DType::f64));
  auto kk = store<T>(testing::random_tensor({c.b, c.h, c.tk, DK}, seed + 1, -1.5, 1.5, DType::f64));
  auto v = store<T>(testing::random_tensor({c.b, c.h, c.tk, DV}, seed + 2, -1.0, 1.0, DType::f64));
  auto dout = store<T>(testing::random_tensor({c.b, c.h, c.tq, DV}, seed + 3, -1.0, 1.0, DType::f64));
  Stored<T> mask;
  if (c.mask) mask = store<T>(make_mask(c));
  std::vector<std::int32_t> lengths;
  if (c.lengths) lengths = make_lengths(c);

  flash::FlashOptions o;
  o.causal = c.causal;
  o.scale = 1.0 / std::sqrt(static_cast<double>(DK));
  o.dropout = c.dropout;
  o.seed = 77;
  o.offset = 5;
  const flash::DropoutStream drop{o.dropout, o.seed, o.offset};
  const float scale = static_cast<float>(o.scale);

  // Key lengths: given, or derived from the mask by the kernel (checked against the CPU's).
  Tensor lengths_ref;
  if (c.lengths) lengths_ref = Tensor::from_vector<std::int32_t>({c.b}, lengths);
  if (c.mask) {
    lengths.assign(static_cast<std::size_t>(c.b), -1);
    const k::Grid g = k::key_lengths_grid(c.b);
    emu::launch(dim3(g.x, g.y), k::kThreads,
                [&] { k::key_lengths_kernel<T>(mask.device.data(), c.b, c.tk, lengths.data()); });
    lengths_ref = Tensor::empty({c.b}, DType::i32);
    flash::detail::flash_key_lengths_cpu(mask.reference, lengths_ref);
    CHECK(lengths == lengths_ref.to_vector<std::int32_t>());
  }
  const T* mask_ptr = c.mask ? mask.device.data() : nullptr;
  const std::int32_t* lengths_ptr = lengths.empty() ? nullptr : lengths.data();

  // Reference: the CPU path in f64 on exactly the stored values.
  const Tensor q64 = q.reference, k64 = kk.reference, v64 = v.reference;
  Tensor out64 = Tensor::empty({c.b, c.h, c.tq, DV}, DType::f64), lse64 = Tensor::empty({c.b, c.h, c.tq}, DType::f64);
  flash::detail::flash_forward_cpu(q64, k64, v64, mask.reference, lengths_ref, o, out64, lse64);
  Tensor dq64 = Tensor::empty_like(q64), dk64 = Tensor::empty_like(k64), dv64 = Tensor::empty_like(v64);
  flash::detail::flash_backward_cpu(q64, k64, v64, out64, lse64, dout.reference, mask.reference, lengths_ref, o, dq64,
                                    dk64, dv64);

  // Forward.
  std::vector<T> out(static_cast<std::size_t>(c.b * c.h * c.tq * DV));
  std::vector<float> lse(static_cast<std::size_t>(c.b * c.h * c.tq));
  const k::Grid gq = k::query_tile_grid(c.b * c.h, c.tq);
  emu::launch(dim3(gq.x, gq.y), k::kThreads, [&] {
    k::forward_kernel<T, DK, DV>(q.device.data(), kk.device.data(), v.device.data(), mask_ptr, lengths_ptr, c.h, c.tq,
                                 c.tk, c.causal, scale, drop, out.data(), lse.data());
  });
  const testing::Tolerance out_tol = bf16 ? testing::Tolerance{1e-2, 1e-2} : testing::Tolerance{2e-6, 2e-5};
  check_close(as_doubles(out), out64, out_tol, "out");
  std::vector<double> lse_d(lse.begin(), lse.end());
  auto want_lse = lse64.to_vector<double>();
  for (std::size_t r = 0; r < lse_d.size(); ++r)
    if (std::isinf(want_lse[r])) {
      CHECK_MESSAGE(lse_d[r] == want_lse[r], "row ", r, " sees no key: lse ", lse_d[r]);
      lse_d[r] = want_lse[r] = 0.0;  // compared above; keep compare() away from inf - inf
    }
  check_close(lse_d, Tensor::from_vector<double>(lse64.shape(), want_lse), {1e-5, 1e-5}, "lse");

  // Backward, from the kernel's own out and lse (as on the device).
  std::vector<float> delta(static_cast<std::size_t>(c.b * c.h * c.tq));
  const k::Grid gd = k::delta_grid(c.b * c.h * c.tq);
  emu::launch(dim3(gd.x, gd.y), k::kThreads, [&] {
    k::delta_kernel<T>(out.data(), dout.device.data(), c.b * c.h * c.tq, DV, delta.data());
  });
  std::vector<T> dq(q.device.size()), dk(kk.device.size()), dv(v.device.size());
  emu::launch(dim3(gq.x, gq.y), k::kThreads, [&] {
    k::dq_kernel<T, DK, DV>(q.device.data(), kk.device.data(), v.device.data(), mask_ptr, lengths_ptr,
                            dout.device.data(), lse.data(), delta.data(), c.h, c.tq, c.tk, c.causal, scale, drop,
                            dq.data());
  });
  const k::Grid gk = k::key_tile_grid(c.b * c.h, c.tk);
  emu::launch(dim3(gk.x, gk.y), k::kThreads, [&] {
    k::dkdv_kernel<T, DK, DV>(q.device.data(), kk.device.data(), v.device.data(), mask_ptr, lengths_ptr,
                              dout.device.data(), lse.data(), delta.data(), c.h, c.tq, c.tk, c.causal, scale, drop,
                              dk.data(), dv.data());
  });
  // bf16 gradients come from the bf16-rounded out (D = dout . out), as on the device: looser.
  const testing::Tolerance grad_tol = bf16 ? testing::Tolerance{3e-2, 3e-2} : testing::Tolerance{1e-5, 1e-4};
  check_close(as_doubles(dq), dq64, grad_tol, "dq");
  check_close(as_doubles(dk), dk64, grad_tol, "dk");
  check_close(as_doubles(dv), dv64, grad_tol, "dv");
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
