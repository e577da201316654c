// GEMM throughput of attnlab::matmul / attnlab::linear against cblas_sgemm called directly on the
// same shapes: the base Transformer's products (d_model 512, d_ff 2048, 8 heads of 64) for
// T = 4096 tokens. Every pair reports GFLOP/s (counter "FLOPS", 2*M*N*K per product) so the ratio
// attnlab / BLAS is visible in one run. See bench/README.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/testing/base_model.h"

namespace {

using attnlab::Shape;
using attnlab::Tensor;

constexpr std::int64_t kTokens = 4096;  // T
using attnlab::testing::base_model::kFF;     // d_ff
using attnlab::testing::base_model::kModel;  // d_model
using attnlab::testing::base_model::kVocab;  // shared BPE vocabulary
constexpr std::int64_t kLogitTokens = 512;  // logits on fewer tokens: the full T takes seconds
constexpr std::int64_t kHeadsBatch = 512;   // B * h (64 sequences x 8 heads)
constexpr std::int64_t kSeq = 64;           // sequence length per head
using attnlab::testing::base_model::kHead;  // d_head

Tensor random(const Shape& shape, std::uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data<float>();
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>((s >> 40) & 0xFFFF) / 65536.0f - 0.5f;
  }
  return t;
}

void set_flops(benchmark::State& state, double flops_per_iter) {
  state.counters["FLOPS"] =
      benchmark::Counter(flops_per_iter, benchmark::Counter::kIsIterationInvariantRate);
}

// --- linear layers: y [T, out] = x [T, in] W^T, W [out, in] ---------------------------------

void attnlab_linear(benchmark::State& state, std::int64_t rows, std::int64_t in, std::int64_t out,
                    bool bias) {
  Tensor x = random({rows, in}, 1);
  Tensor w = random({out, in}, 2);
  Tensor b = bias ? random({out}, 3) : Tensor();
  for (auto _ : state) {
    Tensor y = attnlab::linear(x, w, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_flops(state, 2.0 * rows * in * out);
}

// fresh_output: allocate the output tensor inside the loop like attnlab does (a large block is
// fresh mmap'd memory whose pages fault in on first write), instead of reusing one buffer.
void blas_linear(benchmark::State& state, std::int64_t rows, std::int64_t in, std::int64_t out,
                 bool fresh_output = false) {
  Tensor x = random({rows, in}, 1);
  Tensor w = random({out, in}, 2);
  Tensor reused = Tensor::empty({rows, out});
  for (auto _ : state) {
    Tensor y = fresh_output ? Tensor::empty({rows, out}) : reused;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(out),
                static_cast<int>(in), 1.0f, x.data<float>(), static_cast<int>(in), w.data<float>(),
                static_cast<int>(in), 0.0f, y.data<float>(), static_cast<int>(out));
    benchmark::DoNotOptimize(y.raw_data());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * rows * in * out);
}

// --- plain matmul: [T, K] @ [K, N] --------------------------------------------------------------

void attnlab_matmul(benchmark::State& state, std::int64_t m, std::int64_t k, std::int64_t n) {
  Tensor a = random({m, k}, 4);
  Tensor b = random({k, n}, 5);
  for (auto _ : state) {
    Tensor c = attnlab::matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_flops(state, 2.0 * m * n * k);
}

void blas_matmul(benchmark::State& state, std::int64_t m, std::int64_t k, std::int64_t n) {
  Tensor a = random({m, k}, 4);
  Tensor b = random({k, n}, 5);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a.data<float>(), static_cast<int>(k), b.data<float>(),
                static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * m * n * k);
}

// --- attention: batch of [S, d] x [S, d]^T (scores) and [S, S] x [S, d] (context) ---------------

void attnlab_attention(benchmark::State& state, bool scores) {
  const std::int64_t bh = kHeadsBatch, s = kSeq, d = kHead;
  Tensor q = random({bh, s, scores ? d : s}, 6);  // Q, or the probabilities P
  Tensor k = random({bh, s, d}, 7);               // K, or V
  for (auto _ : state) {
    Tensor c = attnlab::matmul(q, k, false, scores);
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_flops(state, 2.0 * bh * s * s * d);
}

// The straightforward BLAS loop: one cblas_sgemm per batch entry, each threaded by OpenBLAS.
void blas_attention(benchmark::State& state, bool scores) {
  const std::int64_t bh = kHeadsBatch, s = kSeq, d = kHead;
  Tensor q = random({bh, s, scores ? d : s}, 6);
  Tensor k = random({bh, s, d}, 7);
  const std::int64_t n = scores ? s : d, inner = scores ? d : s;
  std::vector<float> c(static_cast<std::size_t>(bh * s * n));
  const float* pq = q.data<float>();
  const float* pk = k.data<float>();
  for (auto _ : state) {
    for (std::int64_t i = 0; i < bh; ++i) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, scores ? CblasTrans : CblasNoTrans, static_cast<int>(s),
                  static_cast<int>(n), static_cast<int>(inner), 1.0f, pq + i * s * inner,
                  static_cast<int>(inner), pk + i * s * d, static_cast<int>(d), 0.0f,
                  c.data() + i * s * n, static_cast<int>(n));
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * bh * s * s * d);
}

void register_all() {
  auto reg = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  const std::string t = std::to_string(kTokens);
  // Q/K/V/output projections: [T, 512] -> 512 (no bias in the attention projections).
  reg("proj_" + t + "x512x512/attnlab_linear",
      [=](benchmark::State& s) { attnlab_linear(s, kTokens, kModel, kModel, false); });
  reg("proj_" + t + "x512x512/cblas_sgemm",
      [=](benchmark::State& s) { blas_linear(s, kTokens, kModel, kModel); });
  reg("proj_" + t + "x512x512/attnlab_matmul",
      [=](benchmark::State& s) { attnlab_matmul(s, kTokens, kModel, kModel); });
  reg("proj_" + t + "x512x512/cblas_sgemm_nn",
      [=](benchmark::State& s) { blas_matmul(s, kTokens, kModel, kModel); });
  // FFN up [T, 512] -> 2048 and down [T, 2048] -> 512, with bias.
  reg("ffn_up_" + t + "x512x2048/attnlab_linear_bias",
      [=](benchmark::State& s) { attnlab_linear(s, kTokens, kModel, kFF, true); });
  reg("ffn_up_" + t + "x512x2048/attnlab_linear",
      [=](benchmark::State& s) { attnlab_linear(s, kTokens, kModel, kFF, false); });
  reg("ffn_up_" + t + "x512x2048/cblas_sgemm",
      [=](benchmark::State& s) { blas_linear(s, kTokens, kModel, kFF); });
  reg("ffn_up_" + t + "x512x2048/cblas_sgemm_fresh_out",
      [=](benchmark::State& s) { blas_linear(s, kTokens, kModel, kFF, true); });
  reg("ffn_down_" + t + "x2048x512/attnlab_linear_bias",
      [=](benchmark::State& s) { attnlab_linear(s, kTokens, kFF, kModel, true); });
  reg("ffn_down_" + t + "x2048x512/cblas_sgemm",
      [=](benchmark::State& s) { blas_linear(s, kTokens, kFF, kModel); });
  // Output logits on fewer tokens: [512, 512] -> 37000.
  reg("logits_512x512x37000/attnlab_linear",
      [=](benchmark::State& s) { attnlab_linear(s, kLogitTokens, kModel, kVocab, false); });
  reg("logits_512x512x37000/cblas_sgemm",
      [=](benchmark::State& s) { blas_linear(s, kLogitTokens, kModel, kVocab); });
  reg("logits_512x512x37000/cblas_sgemm_fresh_out",
      [=](benchmark::State& s) { blas_linear(s, kLogitTokens, kModel, kVocab, true); });
  // Attention: 512 products of 64x64x64.
  reg("attn_scores_512x(64x64x64)/attnlab_matmul", [](benchmark::State& s) { attnlab_attention(s, true); });
  reg("attn_scores_512x(64x64x64)/cblas_sgemm_loop", [](benchmark::State& s) { blas_attention(s, true); });
  reg("attn_context_512x(64x64x64)/attnlab_matmul", [](benchmark::State& s) { attnlab_attention(s, false); });
  reg("attn_context_512x(64x64x64)/cblas_sgemm_loop", [](benchmark::State& s) { blas_attention(s, false); });
}

}  // namespace

int main(int argc, char** argv) {
  attnlab::set_num_threads(2);
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
