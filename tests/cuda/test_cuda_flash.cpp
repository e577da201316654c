// The flash attention plugin and its kernels on cuda:0 against the CPU: the conformance kit in
// f32 with scaled_dot on cuda:0 as the reference, and the op for every pairing of the head sizes
// it is compiled for, in f32 and bf16, with padding masks, causal masking, one decoding step, a
// fully padded batch row and dropout (the CPU and the GPU drop the same weights), forward and
// backward, position terms in kernel form with their gradients, and the bf16 kernels taking f32
// tensors under bf16 compute precision. Skipped without a CUDA device.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/plugin/conformance.h"
#include "attnlab/plugin/loader.h"
#include "flash_attention.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"
#include "support/plugin_testing.h"

using namespace attnlab;

namespace {

// [B, Tk] additive mask of dtype: row 0 sees its first 3/4 keys, row 1 all, row 2 none.
Tensor mask_for(std::int64_t b, std::int64_t tk, DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> m(static_cast<std::size_t>(b * tk), 0.0);
  for (std::int64_t j = 0; j < tk; ++j) {
    if (j >= tk * 3 / 4) m[static_cast<std::size_t>(j)] = -inf;
    if (b > 2) m[static_cast<std::size_t>(2 * tk + j)] = -inf;
  }
  return Tensor::from_vector<double>({b, tk}, m).to(dtype);
}

struct Case {
  std::int64_t b, h, tq, tk;
  bool causal, mask;
  double dropout;
  bool terms = false;  // position terms in kernel form: distance bias, bucket scores and values
  bool value_terms = true;  // with terms: the bucket values too (without them: score terms only)
  bool score_buckets = true;  // with terms: the bucket scores too (without them and the values: ALiBi)
};

// The op on cuda:0 in `dtype` against the CPU in f64 on the same (rounded) values.
void check_op(const Case& c, std::int64_t dk, std::int64_t dv, DType dtype) {
  INFO("dtype ", dtype_name(dtype), " d_k ", dk, " d_v ", dv, " B ", c.b, " Tq ", c.tq, " Tk ", c.tk, " causal ",
       c.causal, " mask ", c.mask, " dropout ", c.dropout);
  // Inputs rounded to dtype once; the reference computes on exactly those values.
  auto input = [&](const Shape& s, std::uint64_t seed) {
    return testing::random_tensor(s, seed, -1.5, 1.5, DType::f64).to(dtype).to(DType::f64);
  };
  const Tensor q = input({c.b, c.h, c.tq, dk}, 1), k = input({c.b, c.h, c.tk, dk}, 2), v = input({c.b, c.h, c.tk, dv}, 3);
  const Tensor dout = input({c.b, c.h, c.tq, dv}, 4);
  const std::int64_t clip = 3, buckets = 2 * clip + 1;
  const Tensor scores = input({c.b, c.h, c.tq, buckets}, 5), values = input({buckets, dv}, 6);
  std::vector<double> slopes;
  for (std::int64_t n = 0; n < c.h; ++n) slopes.push_back(0.25 / static_cast<double>(n + 1));
  flash::FlashOptions o{.causal = c.causal, .scale = 1.0 / std::sqrt(static_cast<double>(dk)), .dropout = c.dropout,
                        .seed = 3, .offset = 11};
  auto run = [&](DType t, Device device) {
    Tensor qq = q.to(t).to(device), kk = k.to(t).to(device), vv = v.to(t).to(device);
    Tensor ss = scores.to(t).to(device), vb = values.to(t).to(device);
    for (Tensor* x : {&qq, &kk, &vv, &ss, &vb}) x->set_requires_grad();
    flash::FlashOptions oo = o;
    if (c.mask) oo.key_padding_mask = mask_for(c.b, c.tk, t).to(device);
    if (c.terms) {
      oo.score_terms = {.slopes = Tensor::from_vector<double>({c.h}, slopes).to(device),
                        .bucket_scores = c.score_buckets ? ss : Tensor{}, .clip = clip};
      if (c.value_terms) oo.value_terms = {.bucket_values = vb, .clip = clip};
    }
    auto r = flash::flash_attention_forward(qq, kk, vv, oo);
    r.out.backward(dout.to(t).to(device));
    std::vector<Tensor> out{r.out.to(Device::cpu()), r.logsumexp.to(Device::cpu()), qq.grad().to(Device::cpu()),
                            kk.grad().to(Device::cpu()), vv.grad().to(Device::cpu())};
    if (c.terms && c.score_buckets) out.push_back(ss.grad().to(Device::cpu()));
    if (c.terms && c.value_terms) out.push_back(vb.grad().to(Device::cpu()));
    return out;
  };
  const auto want = run(DType::f64, Device::cpu());
  const auto got = run(dtype, Device::cuda(0));
  const testing::Tolerance tol = testing::tolerance_for(dtype);
  const testing::Tolerance grad_tol = dtype == DType::bf16 ? testing::Tolerance{6e-2, 6e-2} : testing::Tolerance{1e-4, 1e-4};
  CHECK_TENSOR_NEAR(got[0].to(DType::f64), want[0], tol);
  // Rows that see no key have lse -inf on both sides; compare the others.
  auto lse_got = got[1].to_vector<double>(), lse_want = want[1].to_vector<double>();
  for (std::size_t i = 0; i < lse_want.size(); ++i)
    if (std::isinf(lse_want[i])) {
      CHECK(lse_got[i] == lse_want[i]);
      lse_got[i] = lse_want[i] = 0.0;
    }
  CHECK_TENSOR_NEAR(Tensor::from_vector<double>(got[1].shape(), lse_got), lse_want, testing::Tolerance{1e-4, 1e-4});
  for (std::size_t g = 2; g < want.size(); ++g) CHECK_TENSOR_NEAR(got[g].to(DType::f64), want[g], grad_tol);
}

}  // namespace

TEST_CASE("cuda flash passes the conformance kit against scaled_dot in f32") {
  SKIP_WITHOUT_CUDA();
  Registry& registry = testing::in_tree_plugins().registry;
  ConformanceOptions options;
  options.device = Device::cuda(0);
  options.reference = "scaled_dot";
  const ConformanceReport report = run_conformance(registry, PluginFamily::attention, "flash", options);
  INFO(report.summary());
  CHECK(report.passed());
  // The kit ran in f32 at the smallest head sizes the CUDA kernels serve.
  CHECK(report.checks.front().name == "serves the kit's model on cuda:0 (f32, d_k 16, d_v 32)");
}

TEST_CASE("cuda flash matches the cpu for every head size pairing in f32 and bf16") {
  SKIP_WITHOUT_CUDA();
  const Case c{.b = 3, .h = 2, .tq = 37, .tk = 45, .causal = false, .mask = true, .dropout = 0.0};
  for (DType dtype : {DType::f32, DType::bf16})
    for (std::int64_t dk : flash::kCudaHeadDims)
      for (std::int64_t dv : flash::kCudaHeadDims) check_op(c, dk, dv, dtype);
}

TEST_CASE("cuda flash matches the cpu with causal masking decoding steps and dropout") {
  SKIP_WITHOUT_CUDA();
  const Case cases[] = {
      {.b = 2, .h = 2, .tq = 70, .tk = 70, .causal = true, .mask = true, .dropout = 0.0},   // decoder self-attention
      {.b = 3, .h = 2, .tq = 1, .tk = 90, .causal = true, .mask = true, .dropout = 0.0},    // one step against a cache
      {.b = 2, .h = 2, .tq = 50, .tk = 20, .causal = true, .mask = false, .dropout = 0.0},  // rows that see nothing
      {.b = 2, .h = 4, .tq = 33, .tk = 65, .causal = false, .mask = true, .dropout = 0.2},  // the same weights dropped
  };
  for (DType dtype : {DType::f32, DType::bf16})
    for (const Case& c : cases) check_op(c, 64, 64, dtype);
}

TEST_CASE("cuda flash applies position terms in kernel form as the cpu does") {
  SKIP_WITHOUT_CUDA();
  const Case cases[] = {
      {.b = 3, .h = 2, .tq = 70, .tk = 70, .causal = true, .mask = true, .dropout = 0.0, .terms = true},
      {.b = 2, .h = 3, .tq = 1, .tk = 90, .causal = true, .mask = true, .dropout = 0.0, .terms = true},
      {.b = 2, .h = 2, .tq = 33, .tk = 65, .causal = false, .mask = true, .dropout = 0.2, .terms = true},
  };
  // bf16 at head size 64 leaves the tensor cores for the FMA kernels, which apply the terms.
  for (DType dtype : {DType::f32, DType::bf16})
    for (const Case& c : cases) check_op(c, 64, 64, dtype);
}

TEST_CASE("cuda flash tensor core kernels match the cpu across several 64 row tiles") {
  SKIP_WITHOUT_CUDA();
  const Case cases[] = {
      {.b = 2, .h = 2, .tq = 130, .tk = 150, .causal = true, .mask = true, .dropout = 0.1},
      {.b = 3, .h = 1, .tq = 129, .tk = 200, .causal = false, .mask = true, .dropout = 0.0},
  };
  for (const Case& c : cases)
    for (std::int64_t dk : {64, 128})
      for (std::int64_t dv : {64, 128}) check_op(c, dk, dv, DType::bf16);
}

// The problems flash's Hopper kernels take (bf16, d_k = d_v; masks, dropout and the score terms,
// forward and backward, the bucket scores' gradient included; relative's value terms in the
// forward, their backward on the FMA kernels) over several of their 128-row tiles; ALiBi alone
// runs on the sm_80 tensor-core kernels too, forward and backward. Without ATTNLAB_FLASH_SM90=1,
// or off sm_90, the same problems run on the sm_80 and FMA kernels: the check holds for every kernel.
TEST_CASE("cuda flash matches the cpu on the Hopper kernels' problems across several 128 row tiles in bf16") {
  SKIP_WITHOUT_CUDA();
  const Case cases[] = {
      {.b = 2, .h = 2, .tq = 300, .tk = 300, .causal = true, .mask = true, .dropout = 0.0, .terms = true,
       .value_terms = false},
      {.b = 2, .h = 2, .tq = 200, .tk = 390, .causal = false, .mask = true, .dropout = 0.0, .terms = true,
       .value_terms = false},
      {.b = 2, .h = 1, .tq = 150, .tk = 60, .causal = true, .mask = false, .dropout = 0.0},  // rows that see nothing
      {.b = 3, .h = 2, .tq = 260, .tk = 129, .causal = false, .mask = true, .dropout = 0.0},
      {.b = 2, .h = 2, .tq = 200, .tk = 270, .causal = true, .mask = true, .dropout = 0.15, .terms = true,
       .value_terms = false},  // dropout with relative positions
      {.b = 2, .h = 3, .tq = 200, .tk = 200, .causal = true, .mask = true, .dropout = 0.0, .terms = true,
       .value_terms = false, .score_buckets = false},  // ALiBi alone: the sm_80 tensor-core kernels too
      {.b = 2, .h = 2, .tq = 260, .tk = 300, .causal = true, .mask = true, .dropout = 0.0, .terms = true},  // values
      {.b = 1, .h = 2, .tq = 200, .tk = 200, .causal = false, .mask = false, .dropout = 0.1, .terms = true},
  };
  for (const Case& c : cases)
    for (std::int64_t d : {64, 128}) check_op(c, d, d, DType::bf16);
}

TEST_CASE("cuda flash refuses a head size its kernels lack and names the fallback") {
  SKIP_WITHOUT_CUDA();
  const Tensor q = Tensor::zeros({1, 1, 2, 512}, DType::f32, Device::cuda(0));
  CHECK_THROWS_WITH_AS(flash::flash_attention(q, q, q),
                       doctest::Contains("attention flash: head size d_k = 512 and d_v = 512 is not supported on cuda "
                                         "(supported head sizes: 16, 32, 64, 128); set fallback = \"scaled_dot\""),
                       Error);
}

TEST_CASE("cuda flash under bf16 precision runs its bf16 kernels and hands f32 back") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda(0);
  const std::int64_t b = 2, h = 2, tq = 70, tk = 70, d = 64;
  const Tensor q = testing::random_tensor({b, h, tq, d}, 31, -1.5, 1.5, DType::f32);
  const Tensor k = testing::random_tensor({b, h, tk, d}, 32, -1.5, 1.5, DType::f32);
  const Tensor v = testing::random_tensor({b, h, tk, d}, 33, -1.0, 1.0, DType::f32);
  const Tensor dout = testing::random_tensor({b, h, tq, d}, 34, -1.0, 1.0, DType::f32);
  flash::FlashOptions o{.causal = true, .scale = 0.125, .dropout = 0.1, .seed = 5, .offset = 6};
  o.key_padding_mask = mask_for(b, tk, DType::f32).to(gpu);
  // Under bf16 precision, with f32 tensors on the GPU.
  std::vector<Tensor> got;
  {
    PrecisionGuard guard(Precision::bf16);
    Tensor qq = q.to(gpu), kk = k.to(gpu), vv = v.to(gpu);
    for (Tensor* x : {&qq, &kk, &vv}) x->set_requires_grad();
    const Tensor out = flash::flash_attention_in_precision(qq, kk, vv, o);
    CHECK(out.dtype() == DType::f32);
    out.backward(dout.to(gpu));
    for (const Tensor& t : {out, qq.grad(), kk.grad(), vv.grad()}) got.push_back(t.to(Device::cpu()));
  }
  for (const Tensor& g : got) CHECK(g.dtype() == DType::f32);
  // The same as the bf16 kernels called on bf16 copies.
  flash::FlashOptions ob = o;
  ob.key_padding_mask = o.key_padding_mask.to(DType::bf16);
  const Tensor direct = flash::flash_attention(q.to(DType::bf16).to(gpu), k.to(DType::bf16).to(gpu),
                                               v.to(DType::bf16).to(gpu), ob);
  CHECK(got[0].to_vector<float>() == direct.to(DType::f32).to(Device::cpu()).to_vector<float>());
  // And close to the CPU in f64 on the bf16-rounded inputs.
  auto rounded = [](const Tensor& x) {
    Tensor r = x.to(DType::bf16).to(DType::f64);
    r.set_requires_grad();
    return r;
  };
  Tensor q64 = rounded(q), k64 = rounded(k), v64 = rounded(v);
  flash::FlashOptions o64 = o;
  o64.key_padding_mask = mask_for(b, tk, DType::f64);
  const Tensor want = flash::flash_attention(q64, k64, v64, o64);
  want.backward(dout.to(DType::bf16).to(DType::f64));
  CHECK_TENSOR_NEAR(got[0].to(DType::f64), want, testing::tolerance_for(DType::bf16));
  const testing::Tolerance grad_tol{6e-2, 6e-2};
  CHECK_TENSOR_NEAR(got[1].to(DType::f64), q64.grad(), grad_tol);
  CHECK_TENSOR_NEAR(got[2].to(DType::f64), k64.grad(), grad_tol);
  CHECK_TENSOR_NEAR(got[3].to(DType::f64), v64.grad(), grad_tol);
}
