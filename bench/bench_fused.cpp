// The fused kernels against the unfused ops they replace (see bench/README.md):
//   * the post-norm residual block LayerNorm(r + Dropout(x)) of the base model on 12500 tokens
//     (half a 25k-token batch) x d_model 512: dropout_add_layer_norm vs dropout, add, layer_norm,
//     forward alone (no tape) and forward + backward;
//   * the pre-norm step on the same shapes, s = r + Dropout(x) and LayerNorm(s), both kept:
//     dropout_add_norm_pair vs dropout, add, layer_norm (forward + backward through both outputs);
//   * the first layer of the base model's feed-forward network, max(0, x W1 + b1) with x [12500,
//     512] and W1 [2048, 512]: linear_relu vs relu(linear), forward alone and forward + backward;
//   * one Adam step over the base model's 253 parameter tensors (63.1 M values): adam_step_multi vs
//     adam_step per tensor.
// On the CPU by default (2 threads, `--threads=N`); `--device=cuda` (or ATTNLAB_BENCH_DEVICE=cuda)
// runs the same on GPU 0 and exits cleanly, doing nothing, where no CUDA device is visible.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/testing/base_model.h"

namespace {

using attnlab::Device;
using attnlab::DType;
using attnlab::Shape;
using attnlab::Tensor;

constexpr std::int64_t kTokens = 12500;  // rows of the residual block
using attnlab::testing::base_model::kDrop;  // P_drop
using attnlab::testing::base_model::kFF;
using attnlab::testing::base_model::kModel;
using attnlab::testing::base_model::kVocab;
constexpr double kEps = 1e-6;

Device g_device = Device::cpu();

Tensor random(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data<float>();
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>(lo + (hi - lo) * static_cast<double>((s >> 40) & 0xFFFFFF) / 16777216.0);
  }
  return t.to(g_device);
}

// Waits for the device's queued work (nothing to wait for on the CPU).
void sync() {
  if (g_device.is_cuda()) attnlab::synchronize(g_device);
}

// --- residual block --------------------------------------------------------------------------

struct Block {
  Tensor x, residual, gamma, beta, dy;
  explicit Block(bool grad) {
    x = random({kTokens, kModel}, 1);
    residual = random({kTokens, kModel}, 2);
    gamma = random({kModel}, 3, 0.5, 1.5);
    beta = random({kModel}, 4, -0.1, 0.1);
    dy = random({kTokens, kModel}, 5);
    if (grad)
      for (Tensor* t : {&x, &residual, &gamma, &beta}) t->set_requires_grad();
  }
  Tensor run(bool fused, std::uint64_t offset) const {
    if (fused)
      return attnlab::dropout_add_layer_norm(
          {.x = x, .bias = Tensor(), .residual = residual, .gamma = gamma, .beta = beta}, kDrop, 42, offset, kEps);
    return attnlab::layer_norm(attnlab::add(residual, attnlab::dropout(x, kDrop, 42, offset)), gamma, beta, kEps);
  }
  // The pre-norm step: the sum (the residual stream) and its norm, added so that one backward
  // sends dy into both (the add costs both paths the same).
  Tensor run_pair(bool fused, std::uint64_t offset) const {
    if (fused) {
      const attnlab::DropoutAddNormPair out = attnlab::dropout_add_norm_pair(
          {.x = x, .bias = Tensor(), .residual = residual, .gamma = gamma, .beta = beta}, kDrop, 42, offset, kEps);
      return attnlab::add(out.sum, out.normed);
    }
    const Tensor s = attnlab::add(residual, attnlab::dropout(x, kDrop, 42, offset));
    return attnlab::add(s, attnlab::layer_norm(s, gamma, beta, kEps));
  }
};

void residual_block(benchmark::State& state, bool fused, bool backward, bool pair = false) {
  Block b(backward);
  std::uint64_t offset = 0;
  for (auto _ : state) {
    if (backward) {
      (pair ? b.run_pair(fused, offset) : b.run(fused, offset)).backward(b.dy);
      for (Tensor* t : {&b.x, &b.residual, &b.gamma, &b.beta}) t->zero_grad();
    } else {
      attnlab::NoGradGuard no_grad;
      benchmark::DoNotOptimize((pair ? b.run_pair(fused, offset) : b.run(fused, offset)).raw_data());
    }
    offset += kTokens * kModel / 4;
    sync();
  }
  state.counters["tokens"] =
      benchmark::Counter(static_cast<double>(kTokens), benchmark::Counter::kIsIterationInvariantRate);
}

// --- the feed-forward network's first layer ------------------------------------------------------

struct FfnFirst {
  Tensor x, w, b, dy;
  explicit FfnFirst(bool grad) {
    x = random({kTokens, kModel}, 6);
    w = random({kFF, kModel}, 7, -0.05, 0.05);  // Xavier's range for 512 -> 2048
    b = random({kFF}, 8, -0.1, 0.1);
    dy = random({kTokens, kFF}, 9);
    if (grad)
      for (Tensor* t : {&x, &w, &b}) t->set_requires_grad();
  }
  Tensor run(bool fused) const {
    return fused ? attnlab::linear_relu(x, w, b) : attnlab::relu(attnlab::linear(x, w, b));
  }
};

void ffn_first(benchmark::State& state, bool fused, bool backward) {
  FfnFirst f(backward);
  for (auto _ : state) {
    if (backward) {
      f.run(fused).backward(f.dy);
      for (Tensor* t : {&f.x, &f.w, &f.b}) t->zero_grad();
    } else {
      attnlab::NoGradGuard no_grad;
      benchmark::DoNotOptimize(f.run(fused).raw_data());
    }
    sync();
  }
  state.counters["tokens"] =
      benchmark::Counter(static_cast<double>(kTokens), benchmark::Counter::kIsIterationInvariantRate);
}

// --- Adam over the base model's parameters ----------------------------------------------------

std::vector<Shape> base_model_shapes() {
  std::vector<Shape> s = {{kVocab, kModel}};  // the shared embedding
  auto attention = [&] {
    for (int k = 0; k < 4; ++k) s.insert(s.end(), {Shape{kModel, kModel}, Shape{kModel}});
  };
  auto ffn_and_norms = [&](int norms) {
    s.insert(s.end(), {Shape{kFF, kModel}, Shape{kFF}, Shape{kModel, kFF}, Shape{kModel}});
    for (int k = 0; k < norms; ++k) s.insert(s.end(), {Shape{kModel}, Shape{kModel}});
  };
  for (int layer = 0; layer < 6; ++layer) {
    attention();
    ffn_and_norms(2);
  }
  for (int layer = 0; layer < 6; ++layer) {
    attention();
    attention();
    ffn_and_norms(3);
  }
  return s;
}

void adam(benchmark::State& state, bool multi) {
  std::vector<Tensor> p, g, m, v;
  std::int64_t values = 0;
  std::uint64_t seed = 10;
  for (const Shape& shape : base_model_shapes()) {
    p.push_back(random(shape, seed++));
    g.push_back(random(shape, seed++, -0.01, 0.01));
    m.push_back(Tensor::zeros(shape, DType::f32, g_device));
    v.push_back(Tensor::zeros(shape, DType::f32, g_device));
    values += shape.numel();
  }
  std::int64_t step = 0;
  for (auto _ : state) {
    const attnlab::AdamHyper h{.lr = 1e-4, .step = ++step};
    if (multi) {
      attnlab::adam_step_multi(p, g, m, v, h);
    } else {
      for (std::size_t i = 0; i < p.size(); ++i) attnlab::adam_step(p[i], g[i], m[i], v[i], h);
    }
    sync();
  }
  state.counters["tensors"] = static_cast<double>(p.size());
  state.counters["values"] = static_cast<double>(values);
}

void register_all() {
  auto reg = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  const std::string shape = std::to_string(kTokens) + "x" + std::to_string(kModel);
  reg("residual_ln_fwd_" + shape + "/unfused", [](benchmark::State& s) { residual_block(s, false, false); });
  reg("residual_ln_fwd_" + shape + "/fused", [](benchmark::State& s) { residual_block(s, true, false); });
  reg("residual_ln_fwd_bwd_" + shape + "/unfused", [](benchmark::State& s) { residual_block(s, false, true); });
  reg("residual_ln_fwd_bwd_" + shape + "/fused", [](benchmark::State& s) { residual_block(s, true, true); });
  reg("prenorm_pair_fwd_" + shape + "/unfused", [](benchmark::State& s) { residual_block(s, false, false, true); });
  reg("prenorm_pair_fwd_" + shape + "/fused", [](benchmark::State& s) { residual_block(s, true, false, true); });
  reg("prenorm_pair_fwd_bwd_" + shape + "/unfused", [](benchmark::State& s) { residual_block(s, false, true, true); });
  reg("prenorm_pair_fwd_bwd_" + shape + "/fused", [](benchmark::State& s) { residual_block(s, true, true, true); });
  const std::string ffn = std::to_string(kTokens) + "x" + std::to_string(kModel) + "x" + std::to_string(kFF);
  reg("ffn_linear_relu_fwd_" + ffn + "/unfused", [](benchmark::State& s) { ffn_first(s, false, false); });
  reg("ffn_linear_relu_fwd_" + ffn + "/fused", [](benchmark::State& s) { ffn_first(s, true, false); });
  reg("ffn_linear_relu_fwd_bwd_" + ffn + "/unfused", [](benchmark::State& s) { ffn_first(s, false, true); });
  reg("ffn_linear_relu_fwd_bwd_" + ffn + "/fused", [](benchmark::State& s) { ffn_first(s, true, true); });
  reg("adam_base_model/per_tensor", [](benchmark::State& s) { adam(s, false); });
  reg("adam_base_model/multi", [](benchmark::State& s) { adam(s, true); });
}

struct Flags {
  std::string device;
  int threads = 2;
};

// Takes --device=NAME and --threads=N out of argv (Google Benchmark rejects flags it does not know).
Flags take_flags(int& argc, char** argv) {
  const char* env = std::getenv("ATTNLAB_BENCH_DEVICE");
  Flags flags{env ? env : "cpu"};
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--device=", 9) == 0) {
      flags.device = argv[i] + 9;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      flags.threads = std::atoi(argv[i] + 10);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = take_flags(argc, argv);
  g_device = Device::parse(flags.device);
  if (g_device.is_cuda() && attnlab::cuda_device_count() <= g_device.index) {
    std::printf("bench_fused: no CUDA device %s: skipped\n", g_device.str().c_str());
    return 0;
  }
  if (flags.threads < 1) {
    std::fprintf(stderr, "bench_fused: --threads must be >= 1\n");
    return 1;
  }
  attnlab::set_num_threads(flags.threads);
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("device", g_device.str());
  benchmark::AddCustomContext("threads", std::to_string(flags.threads));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
