#pragma once
// The cases of the emulated flash kernel tests (tests/plugins/test_flash_kernels_emulated.cpp for
// the FMA and sm_80 kernels, tests/flash_sm90/test_flash_sm90_kernel_emulated.cpp for the Hopper
// forward): inputs stored in the kernels' element type, masks and key lengths, position terms, and
// the CPU path's results in f64 on exactly the stored values. Include it after a host emulation of
// CUDA (cuda_host_emulation.h, or cuda_sm90_host_emulation.h) and flash_forward_kernels.cuh,
// whose key lengths kernel derives the lengths of a masked case.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "attnlab/attnlab.h"
#include "flash_attention.h"
#include "flash_attention_kernels.h"
#include "support/tensor_testing.h"

namespace flash_emulated_cases {

using namespace attnlab;
namespace k = attnlab::flash::cuda::kernels;
namespace emu = cuda_host_emulation;

constexpr std::int64_t kClip = 3;

struct Case {
  std::int64_t b, h, tq, tk;
  bool causal = false;
  bool mask = false;     // additive mask, lengths derived from it by the key lengths kernel
  bool lengths = false;  // explicit key lengths instead of a mask
  double dropout = 0.0;
  bool terms = false;    // position terms: distance bias, bucket scores and values (clip kClip)
  bool score_buckets = true;  // with terms: the bucket scores too (without them and the values: ALiBi)
  bool value_terms = true;  // with terms: the bucket values too
  std::int64_t value_clip = kClip;  // the bucket values' clip (the scores' is kClip)
};

inline float to_f(float x) { return x; }
inline float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
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
inline Tensor make_mask(const Case& c) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> m(static_cast<std::size_t>(c.b * c.tk), 0.0);
  for (std::int64_t j = 0; j < c.tk; ++j) {
    if (j >= c.tk * 3 / 4 || j == 1) m[static_cast<std::size_t>(j)] = -inf;
    if (c.b > 2) m[static_cast<std::size_t>(2 * c.tk + j)] = -inf;
  }
  return Tensor::from_vector<double>({c.b, c.tk}, m);
}

inline std::vector<std::int32_t> make_lengths(const Case& c) {
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

inline void check_close(const std::vector<double>& got, const Tensor& want, testing::Tolerance tol,
                        const std::string& what) {
  const Tensor g = Tensor::from_vector<double>(want.shape(), got);
  const std::string m = testing::compare(g, want, tol);
  CHECK_MESSAGE(m.empty(), what, ": ", m);
}

// The inputs of a case stored as T, the key lengths the kernels read, and the CPU path's results
// in f64 on exactly the stored values.
template <typename T, int DK, int DV>
struct Prepared {
  Stored<T> q, k, v, dout, mask, bucket_scores, bucket_values;
  std::vector<float> slopes;
  std::vector<std::int32_t> lengths;
  flash::FlashOptions o;
  flash::DropoutStream drop;
  float scale = 1.0f;
  std::int64_t value_clip = kClip;
  Tensor out64, lse64, dq64, dk64, dv64, d_scores64, d_values64;
  // The position terms as the kernels read them (none without them).
  k::PositionTerms<T> terms(std::int64_t tq, std::int64_t tk) const {
    if (slopes.empty()) return {};
    const T* scores = bucket_scores.device.empty() ? nullptr : bucket_scores.device.data();
    const T* values = bucket_values.device.empty() ? nullptr : bucket_values.device.data();
    return {slopes.data(), scores, values, kClip, value_clip, tk - tq};
  }
  const T* mask_ptr() const { return mask.device.empty() ? nullptr : mask.device.data(); }
  const std::int32_t* lengths_ptr() const { return lengths.empty() ? nullptr : lengths.data(); }
};

template <typename T, int DK, int DV>
Prepared<T, DK, DV> prepare(const Case& c, std::uint64_t seed) {
  Prepared<T, DK, DV> r;
  r.q = store<T>(testing::random_tensor({c.b, c.h, c.tq, DK}, seed, -1.5, 1.5, DType::f64));
  r.k = store<T>(testing::random_tensor({c.b, c.h, c.tk, DK}, seed + 1, -1.5, 1.5, DType::f64));
  r.v = store<T>(testing::random_tensor({c.b, c.h, c.tk, DV}, seed + 2, -1.0, 1.0, DType::f64));
  r.dout = store<T>(testing::random_tensor({c.b, c.h, c.tq, DV}, seed + 3, -1.0, 1.0, DType::f64));
  if (c.mask) r.mask = store<T>(make_mask(c));
  if (c.lengths) r.lengths = make_lengths(c);

  r.o.causal = c.causal;
  r.o.scale = 1.0 / std::sqrt(static_cast<double>(DK));
  r.o.dropout = c.dropout;
  r.o.seed = 77;
  r.o.offset = 5;
  r.drop = flash::DropoutStream{r.o.dropout, r.o.seed, r.o.offset};
  r.scale = static_cast<float>(r.o.scale);
  if (c.terms) {
    std::vector<double> slopes;
    for (std::int64_t h = 0; h < c.h; ++h) {
      r.slopes.push_back(0.375f / static_cast<float>(h + 1));
      slopes.push_back(r.slopes.back());
    }
    const std::int64_t n = 2 * kClip + 1;
    if (c.score_buckets)
      r.bucket_scores = store<T>(testing::random_tensor({c.b, c.h, c.tq, n}, seed + 4, -1.0, 1.0, DType::f64));
    if (c.value_terms) {
      r.value_clip = c.value_clip;
      const std::int64_t values = 2 * c.value_clip + 1;
      r.bucket_values = store<T>(testing::random_tensor({values, DV}, seed + 5, -1.0, 1.0, DType::f64));
      r.o.value_terms = {.bucket_values = r.bucket_values.reference, .clip = c.value_clip};
    }
    r.o.score_terms = {.slopes = Tensor::from_vector<double>({c.h}, slopes),
                       .bucket_scores = r.bucket_scores.reference,
                       .clip = kClip};
  }

  // Key lengths: given, or derived from the mask by the kernel (checked against the CPU's).
  Tensor lengths_ref;
  if (c.lengths) lengths_ref = Tensor::from_vector<std::int32_t>({c.b}, r.lengths);
  if (c.mask) {
    r.lengths.assign(static_cast<std::size_t>(c.b), -1);
    const k::Grid g = k::key_lengths_grid(c.b);
    emu::launch(dim3(g.x, g.y), k::kThreads,
                [&] { k::key_lengths_kernel<T>(r.mask.device.data(), c.b, c.tk, r.lengths.data()); });
    lengths_ref = Tensor::empty({c.b}, DType::i32);
    flash::detail::flash_key_lengths_cpu(r.mask.reference, lengths_ref);
    CHECK(r.lengths == lengths_ref.to_vector<std::int32_t>());
  }

  // Reference: the CPU path in f64 on exactly the stored values.
  const Tensor& q64 = r.q.reference;
  r.out64 = Tensor::empty({c.b, c.h, c.tq, DV}, DType::f64);
  r.lse64 = Tensor::empty({c.b, c.h, c.tq}, DType::f64);
  flash::detail::flash_forward_cpu(q64, r.k.reference, r.v.reference, r.mask.reference, lengths_ref, r.o, r.out64,
                                   r.lse64);
  flash::detail::FlashGrads grads{Tensor::empty_like(q64), Tensor::empty_like(r.k.reference),
                                  Tensor::empty_like(r.v.reference), {}, {}, {}};
  if (c.terms && c.score_buckets) grads.d_bucket_scores = Tensor::empty_like(r.bucket_scores.reference);
  if (c.terms && c.value_terms) grads.d_bucket_values = Tensor::empty_like(r.bucket_values.reference);
  flash::detail::flash_backward_cpu(q64, r.k.reference, r.v.reference, r.out64, r.lse64, r.dout.reference,
                                    r.mask.reference, lengths_ref, r.o, grads);
  r.dq64 = grads.dq;
  r.dk64 = grads.dk;
  r.dv64 = grads.dv;
  r.d_scores64 = grads.d_bucket_scores;
  r.d_values64 = grads.d_bucket_values;
  return r;
}

inline void check_lse(const std::vector<float>& lse, const Tensor& lse64) {
  std::vector<double> lse_d(lse.begin(), lse.end());
  auto want_lse = lse64.to_vector<double>();
  for (std::size_t r = 0; r < lse_d.size(); ++r)
    if (std::isinf(want_lse[r])) {
      CHECK_MESSAGE(lse_d[r] == want_lse[r], "row ", r, " sees no key: lse ", lse_d[r]);
      lse_d[r] = want_lse[r] = 0.0;  // compared above; keep compare() away from inf - inf
    }
  check_close(lse_d, Tensor::from_vector<double>(lse64.shape(), want_lse), {1e-5, 1e-5}, "lse");
}

}  // namespace flash_emulated_cases
