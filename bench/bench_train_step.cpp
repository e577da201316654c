// CPU training throughput of the Transformer: one full training step (forward, label-smoothed
// cross-entropy over the logits of the shared embedding, backward of loss_sum / tokens, Adam with
// the paper's schedule) on random token batches, as core/nmt/src/trainer.cpp runs it. A plain
// program (not Google Benchmark) so that its output line matches bench/pytorch_train_step.py,
// which builds the same model in PyTorch; bench/compare_train.sh runs both. See bench/README.md.
//
//   bench_train_step [--model small|base] [--threads N] [--warmup W] [--steps S] [--batch B] [--len T]
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attnlab/attnlab.h"
#include "attnlab/nmt/batching.h"
#include "attnlab/nmt/optimizer.h"
#include "attnlab/nmt/transformer.h"
#include "attnlab/plugin/loader.h"

namespace {

using namespace attnlab;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string model = "small";
  int threads = 2;
  int warmup = -1;  // -1: the model's default
  int steps = -1;
  std::int64_t batch = 128;  // B sentences of T tokens: B * T = 4096 (padded) tokens per side
  std::int64_t len = 32;     // T = S
};

[[noreturn]] void usage(const char* msg) {
  fmt::print(stderr, "bench_train_step: {}\nusage: bench_train_step [--model small|base] [--threads N] "
                     "[--warmup W] [--steps S] [--batch B] [--len T]\n", msg);
  std::exit(2);
}

BenchOptions parse(int argc, char** argv) {
  BenchOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    if (a == "--model") o.model = v;
    else if (a == "--threads") o.threads = std::atoi(v);
    else if (a == "--warmup") o.warmup = std::atoi(v);
    else if (a == "--steps") o.steps = std::atoi(v);
    else if (a == "--batch") o.batch = std::atoll(v);
    else if (a == "--len") o.len = std::atoll(v);
    else usage(("unknown option " + a).c_str());
  }
  if (o.model != "small" && o.model != "base") usage("--model must be small or base");
  if (o.warmup < 0) o.warmup = o.model == "small" ? 3 : 1;
  if (o.steps < 0) o.steps = o.model == "small" ? 10 : 2;
  if (o.threads < 1 || o.steps < 1 || o.batch < 1 || o.len < 2) usage("bad value");
  return o;
}

nmt::TransformerConfig model_config(const std::string& name) {
  if (name == "base") return nmt::paper_base_config(37000);
  nmt::TransformerConfig c;  // post-norm, scaled_dot / sinusoidal / relu / standard dropout
  c.vocab_size = 8000;
  c.encoder_layers = 4;
  c.decoder_layers = 4;
  c.dims = {.d_model = 128, .n_heads = 4, .d_k = 32, .d_v = 32, .d_ff = 256, .max_length = 1024};
  return c;  // dropout: residual 0.1, embedding 0.1 (the paper's sites)
}

// Row b holds T - (b % 4) tokens then padding (id 0), in the source and in the target; the same
// lengths as pytorch_train_step.py. Ids are uniform in [3, V).
nmt::BatchTensors random_batch(std::int64_t b, std::int64_t t, std::int64_t vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> id(3, vocab - 1);
  std::vector<std::int64_t> src(b * t, 0), tin(b * t, 0), tout(b * t, 0);
  nmt::BatchTensors out;
  for (std::int64_t r = 0; r < b; ++r) {
    const std::int64_t n = t - r % 4;
    for (std::int64_t i = 0; i < n; ++i) {
      src[r * t + i] = id(rng);
      tin[r * t + i] = id(rng);
      tout[r * t + i] = id(rng);
    }
    out.src_tokens += n;
    out.tgt_tokens += n;
  }
  out.src = Tensor::from_vector<std::int64_t>({b, t}, src);
  out.tgt_in = Tensor::from_vector<std::int64_t>({b, t}, tin);
  out.tgt_out = Tensor::from_vector<std::int64_t>({b, t}, tout);
  return out;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  const BenchOptions opt = parse(argc, argv);
  set_num_threads(opt.threads);
  Registry registry;
  PluginLoader loader(registry);
  loader.add_search_path(ATTNLAB_BENCH_PLUGIN_DIR);
  loader.load_all();
  for (const auto& f : loader.failures()) fmt::print(stderr, "plugin {}: {}\n", f.path, f.message);

  const nmt::TransformerConfig config = model_config(opt.model);
  Generator init(1), dropout_rng(2);
  nmt::Transformer model(config, registry, init, dropout_rng);
  model.train();
  nmt::AdamOptimizer optimizer(model.named_parameters(), {0.9, 0.98, 1e-9});
  const std::int64_t vocab = config.vocab_size;
  std::vector<nmt::BatchTensors> batches;
  for (std::uint64_t i = 0; i < 4; ++i) batches.push_back(random_batch(opt.batch, opt.len, vocab, 100 + i));

  double fwd_ms = 0, bwd_ms = 0, opt_ms = 0, loss = 0;
  std::int64_t tokens = 0;
  for (int step = 1; step <= opt.warmup + opt.steps; ++step) {
    const bool timed = step > opt.warmup;
    const nmt::BatchTensors& b = batches[static_cast<std::size_t>(step) % batches.size()];
    const auto t0 = Clock::now();
    Tensor logits = model.forward(b.src, b.tgt_in).reshape({-1, vocab});
    auto ce = cross_entropy(logits, b.tgt_out.reshape({-1}), 0.1, config.pad_id);
    Tensor objective = scale(ce.loss_sum, 1.0 / static_cast<double>(b.tgt_tokens));
    const auto t1 = Clock::now();
    objective.backward();
    const auto t2 = Clock::now();
    optimizer.step(nmt::transformer_lr(step, config.dims.d_model, 4000));
    optimizer.zero_grad();
    loss = ce.loss_sum.item() / static_cast<double>(b.tgt_tokens);
    if (!timed) continue;
    fwd_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    bwd_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
    opt_ms += ms_since(t2);
    tokens += b.tgt_tokens;
  }
  const double total = fwd_ms + bwd_ms + opt_ms, n = opt.steps;
  fmt::print("impl=attnlab model={} threads={} batch={}x{} params={} steps={} ms_per_step={:.1f} "
             "tgt_tok_per_s={:.0f} fwd_ms={:.1f} bwd_ms={:.1f} opt_ms={:.1f} loss={:.4f}\n",
             opt.model, opt.threads, opt.batch, opt.len, model.parameter_count(), opt.steps, total / n,
             static_cast<double>(tokens) / (total / 1000.0), fwd_ms / n, bwd_ms / n, opt_ms / n, loss);
  return 0;
}
