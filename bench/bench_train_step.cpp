// Training throughput of the Transformer: one full training step (forward, label-smoothed
// cross-entropy over the logits of the shared embedding, backward of loss_sum / tokens, Adam with
// the paper's schedule) on random token batches, as nmt/train/src/training_state.cpp runs it, on the CPU
// or a CUDA device, in fp32, tf32 or bf16. A plain program (not Google Benchmark) so that its
// output line matches bench/pytorch_train_step.py, which builds the same model in PyTorch;
// bench/compare_train.sh (CPU) and bench/gpu_compare.sh (GPU) run both. See bench/README.md for
// the FLOP count behind the model FLOPs utilization (MFU).
//
//   bench_train_step [--model small|multi30k|base] [--device cpu|cuda:N] [--precision fp32|tf32|bf16]
//                    [--batch-tokens N | --batch B] [--len T] [--threads N] [--warmup W] [--steps S]
//                    [--peak-tflops P]
// small: 4 + 4 layers of width 128, 4 heads, d_ff 256 (experiments/multi30k.toml's model);
// multi30k: 6 + 6 of width 128, 8 heads, d_ff 512 (the base row of table3-multi30k.toml); base:
// the paper's base model.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attnlab/allocator.h"
#include "attnlab/attnlab.h"
#include "attnlab/bf16_operands.h"
#include "attnlab/testing/base_model.h"
#include "attnlab/nmt/data/batching.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/plugin/loader.h"
#include "attnlab/precision.h"
#include "attnlab/profile.h"

namespace {

using namespace attnlab;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string model = "small";
  std::string device = "cpu";
  std::string precision = "fp32";
  int threads = 2;
  int warmup = -1;  // -1: the default of the model and device
  int steps = -1;
  std::int64_t batch = 128;        // B sentences of T tokens: B * T = 4096 (padded) tokens per side
  std::int64_t len = 32;           // T = S
  std::int64_t batch_tokens = 0;   // > 0: B = round(batch_tokens / T)
  double peak_tflops = 0.0;        // 0: the H200's dense peak for the precision on CUDA, none on the CPU
  std::string attention = "scaled_dot";  // the attention plugin (fallback: scaled_dot)
  bool fused = true;                     // TransformerConfig::fused_kernels
};

constexpr const char* kUsage =
    "usage: bench_train_step [--model small|multi30k|base] [--device cpu|cuda:N] [--precision fp32|tf32|bf16]\n"
    "                        [--batch-tokens N | --batch B] [--len T] [--threads N] [--warmup W] [--steps S]\n"
    "                        [--peak-tflops P] [--attention scaled_dot|flash|cudnn|...] [--fused 1|0]\n";

[[noreturn]] void usage(const std::string& msg) {
  fmt::print(stderr, "bench_train_step: {}\n{}", msg, kUsage);
  std::exit(2);
}

BenchOptions parse(int argc, char** argv) {
  BenchOptions o;
  bool batch_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kUsage);
      std::exit(0);
    }
    if (i + 1 >= argc) usage("missing value after " + a);
    const char* v = argv[++i];
    if (a == "--model") o.model = v;
    else if (a == "--device") o.device = v;
    else if (a == "--precision") o.precision = v;
    else if (a == "--threads") o.threads = std::atoi(v);
    else if (a == "--warmup") o.warmup = std::atoi(v);
    else if (a == "--steps") o.steps = std::atoi(v);
    else if (a == "--batch") o.batch = std::atoll(v), batch_given = true;
    else if (a == "--len") o.len = std::atoll(v);
    else if (a == "--batch-tokens") o.batch_tokens = std::atoll(v);
    else if (a == "--peak-tflops") o.peak_tflops = std::atof(v);
    else if (a == "--attention") o.attention = v;
    else if (a == "--fused") o.fused = std::string(v) != "0";
    else usage("unknown option " + a);
  }
  if (o.model != "small" && o.model != "multi30k" && o.model != "base") usage("--model must be small, multi30k or base");
  if (!find_precision(o.precision)) usage("--precision must be fp32, tf32 or bf16");
  if (o.batch_tokens > 0 && batch_given) usage("give --batch-tokens or --batch, not both");
  if (o.len < 2) usage("--len must be at least 2");
  if (o.batch_tokens > 0) o.batch = std::max<std::int64_t>(1, (o.batch_tokens + o.len / 2) / o.len);
  const bool gpu = o.device != "cpu";
  const bool small = o.model != "base";
  if (o.warmup < 0) o.warmup = small || gpu ? 3 : 1;
  if (o.steps < 0) o.steps = small || gpu ? 10 : 2;
  if (o.threads < 1 || o.steps < 1 || o.batch < 1 || o.peak_tflops < 0) usage("bad value");
  return o;
}

nmt::TransformerConfig model_config(const std::string& name) {
  if (name == "base") return nmt::paper_base_config(testing::base_model::kVocab);
  nmt::TransformerConfig c;  // post-norm, scaled_dot / sinusoidal / relu / standard dropout
  c.vocab_size = 8000;
  c.encoder_layers = 4;
  c.decoder_layers = 4;
  c.dims = {.d_model = 128, .n_heads = 4, .d_k = 32, .d_v = 32, .d_ff = 256, .max_length = 1024};
  if (name == "multi30k") {  // the base row of experiments/table3-multi30k.toml
    c.encoder_layers = c.decoder_layers = 6;
    c.dims = {.d_model = 128, .n_heads = 8, .d_k = 16, .d_v = 16, .d_ff = 512, .max_length = 1024};
  }
  return c;  // dropout: residual 0.1, embedding 0.1 (the paper's sites)
}

struct Batch {
  nmt::BatchTensors tensors;
  std::vector<std::int64_t> lengths;  // real tokens of each row (source = target)
};

// Row b holds T - (b % 4) tokens then padding (id 0), in the source and in the target; the same
// lengths as pytorch_train_step.py. Ids are uniform in [3, V).
Batch random_batch(std::int64_t b, std::int64_t t, std::int64_t vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> id(3, vocab - 1);
  std::vector<std::int64_t> src(b * t, 0), tin(b * t, 0), tout(b * t, 0);
  Batch out;
  for (std::int64_t r = 0; r < b; ++r) {
    const std::int64_t n = t - r % 4;
    for (std::int64_t i = 0; i < n; ++i) {
      src[r * t + i] = id(rng);
      tin[r * t + i] = id(rng);
      tout[r * t + i] = id(rng);
    }
    out.tensors.src_tokens += n;
    out.tensors.tgt_tokens += n;
    out.lengths.push_back(n);
  }
  out.tensors.src = Tensor::from_vector<std::int64_t>({b, t}, src);
  out.tensors.tgt_in = Tensor::from_vector<std::int64_t>({b, t}, tin);
  out.tensors.tgt_out = Tensor::from_vector<std::int64_t>({b, t}, tout);
  return out;
}

// Model FLOPs of one training step (forward + backward = 3 x forward), over real tokens only
// (bench/README.md):
//   6 x (non-embedding parameters) x tokens: encoder parameters and the decoder's cross-attention
//       key/value projections see the source tokens, every other decoder parameter the target
//       tokens;
//   6 x d_model x V x target tokens: the output projection through the shared embedding (its
//       lookups cost nothing);
//   attention: 6 x h x (d_k + d_v) x Tq x Tk per sentence and attention layer (Q K^T and P V),
//       full T x T for the decoder's causal self-attention, as it is computed.
double model_flops(const nmt::Transformer& model, const std::vector<std::int64_t>& lengths) {
  const nmt::TransformerConfig& c = model.config();
  double src_tokens = 0, squares = 0;
  for (std::int64_t n : lengths) {
    src_tokens += static_cast<double>(n);
    squares += static_cast<double>(n) * static_cast<double>(n);
  }
  const double tgt_tokens = src_tokens;  // the same lengths on both sides here
  double src_params = 0, tgt_params = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    if (name == "embedding") continue;
    const bool source_side = name.starts_with("encoder.") || name.find(".cross_attn.w_k.") != std::string::npos ||
                             name.find(".cross_attn.w_v.") != std::string::npos;
    (source_side ? src_params : tgt_params) += static_cast<double>(p.numel());
  }
  const double d = static_cast<double>(c.dims.d_model), v = static_cast<double>(c.vocab_size);
  const double per_pair = 6.0 * static_cast<double>(c.dims.n_heads) * static_cast<double>(c.dims.d_k + c.dims.d_v);
  // Encoder self (S x S), decoder self (T x T) and cross (T x S) attention; S = T per row here.
  const double attention = per_pair * squares * static_cast<double>(c.encoder_layers + 2 * c.decoder_layers);
  return 6.0 * (src_params * src_tokens + tgt_params * tgt_tokens) + 6.0 * d * v * tgt_tokens + attention;
}

// Dense peak TFLOP/s of an H200 (SXM) for the precision's GEMMs.
double h200_peak_tflops(Precision p) {
  switch (p) {
    case Precision::bf16: return 989.0;
    case Precision::tf32: return 494.0;
    case Precision::fp32: return 67.0;
  }
  return 0.0;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  const BenchOptions opt = parse(argc, argv);
  try {
    const Device device = Device::parse(opt.device);
    check_device_available(device);
    const Precision precision = precision_from_name(opt.precision);
    if (const std::string why = precision_unavailable_reason(precision, device); !why.empty())
      throw Error(fmt::format("--precision {} on {}: {}", opt.precision, device.str(), why));
    set_num_threads(opt.threads);
    Registry registry;
    PluginLoader loader(registry);
    // The build tree's plugins where this binary was built; otherwise $ATTNLAB_PLUGIN_PATH and the
    // folder next to the core library (a packed or installed copy).
    if (std::filesystem::is_directory(ATTNLAB_BENCH_PLUGIN_DIR)) loader.add_search_path(ATTNLAB_BENCH_PLUGIN_DIR);
    loader.load_all();
    for (const auto& f : loader.failures()) fmt::print(stderr, "plugin {}: {}\n", f.path, f.message);

    nmt::TransformerConfig config = model_config(opt.model);
    config.attention = {opt.attention, {}, opt.attention == "scaled_dot" ? "" : "scaled_dot"};
    config.fused_kernels = opt.fused;
    Generator init(1), dropout_rng(2);
    nmt::Transformer model(config, registry, init, dropout_rng, DType::f32, device);
    model.train();
    if (!model.attention().notice.empty()) fmt::print(stderr, "bench_train_step: {}\n", model.attention().notice);
    nmt::AdamOptimizer optimizer(model.named_parameters(), {0.9, 0.98, 1e-9});
    // As the trainer: under bf16 each GEMM operand cast once per forward, the weights' copies
    // written by the optimizer (ATTNLAB_NO_BF16_OPERANDS=1: cast at every use, for comparison).
    const bool bf16_operands = bf16_operands_on(precision);
    // bf16 logits as the trainer (ATTNLAB_NO_BF16_LOGITS=1: f32).
    const bool bf16_logits = bf16_logits_on(precision);
    optimizer.keep_bf16_copies(bf16_operands);
    Bf16Operands::Counts operand_counts;
    const std::int64_t vocab = config.vocab_size;
    std::vector<Batch> batches;
    for (std::uint64_t i = 0; i < 4; ++i) batches.push_back(random_batch(opt.batch, opt.len, vocab, 100 + i));
    const PrecisionGuard guard(precision);

    double fwd_ms = 0, bwd_ms = 0, opt_ms = 0, loss = 0, flops = 0;
    std::int64_t tokens = 0;
    // The step's own host waits per phase (forward with the batch upload, backward, optimizer),
    // the bench's waits between the phases left out. With ATTNLAB_PROFILE=1 every op waits.
    HostWaits fwd_waits, bwd_waits, opt_waits;
    for (int step = 1; step <= opt.warmup + opt.steps; ++step) {
      const bool timed = step > opt.warmup;
      const Batch& batch = batches[static_cast<std::size_t>(step) % batches.size()];
      const nmt::BatchTensors& b = batch.tensors;
      synchronize(device);
      if (profile::enabled()) profile::mark();
      const auto t0 = Clock::now();
      HostWaits w0 = host_waits(device);
      std::optional<Bf16Operands> operands;
      if (bf16_operands) optimizer.provide_bf16_copies(operands.emplace());
      Tensor logits = model.forward(b.src.to(device), b.tgt_in.to(device), bf16_logits).reshape({-1, vocab});
      auto ce = cross_entropy(logits, b.tgt_out.reshape({-1}).to(device), 0.1, config.pad_id);
      Tensor objective = scale(ce.loss_sum, 1.0 / static_cast<double>(b.tgt_tokens));
      if (operands) operand_counts = operands->counts();
      operands.reset();
      const HostWaits in_fwd = host_waits(device) - w0;
      synchronize(device);  // CUDA ops return once queued: wait for each phase to end
      const auto t1 = Clock::now();
      w0 = host_waits(device);
      objective.backward();
      const HostWaits in_bwd = host_waits(device) - w0;
      synchronize(device);
      const auto t2 = Clock::now();
      w0 = host_waits(device);
      optimizer.step(nmt::transformer_lr(step, config.dims.d_model, 4000));
      optimizer.zero_grad();
      const HostWaits in_opt = host_waits(device) - w0;
      synchronize(device);
      const auto t3 = Clock::now();
      loss = ce.loss_sum.item() / static_cast<double>(b.tgt_tokens);
      if (!timed) {
        profile::reset();  // the table covers the timed steps
        continue;
      }
      fwd_ms += ms_between(t0, t1);
      bwd_ms += ms_between(t1, t2);
      opt_ms += ms_between(t2, t3);
      fwd_waits = fwd_waits + in_fwd;
      bwd_waits = bwd_waits + in_bwd;
      opt_waits = opt_waits + in_opt;
      tokens += b.tgt_tokens;
      flops += model_flops(model, batch.lengths);
    }
    const double total_ms = fwd_ms + bwd_ms + opt_ms, n = opt.steps;
    const double achieved_tflops = flops / (total_ms / 1000.0) / 1e12;
    const double peak = opt.peak_tflops > 0 ? opt.peak_tflops : device.is_cuda() ? h200_peak_tflops(precision) : 0.0;
    const std::string mfu = peak > 0 ? fmt::format("{:.3f}", achieved_tflops / peak) : "n/a";
    const AllocatorStats mem = memory_stats(device);
    fmt::print("impl=attnlab model={} device={} precision={} threads={} batch={}x{} params={} steps={} "
               "ms_per_step={:.1f} tgt_tok_per_s={:.0f} fwd_ms={:.1f} bwd_ms={:.1f} opt_ms={:.1f} "
               "model_tflop_per_step={:.3f} tflops={:.1f} peak_tflops={} mfu={} peak_mem_gib={:.2f} loss={:.4f} attention={} fused={} logits={}\n",
               opt.model, device.str(), opt.precision, opt.threads, opt.batch, opt.len, model.parameter_count(),
               opt.steps, total_ms / n, static_cast<double>(tokens) / (total_ms / 1000.0), fwd_ms / n, bwd_ms / n,
               opt_ms / n, flops / n / 1e12, achieved_tflops, peak > 0 ? fmt::format("{:.0f}", peak) : "n/a", mfu,
               static_cast<double>(mem.peak_bytes_reserved) / (1024.0 * 1024.0 * 1024.0), loss,
               model.attention().choice.name, opt.fused ? 1 : 0, bf16_logits ? "bf16" : "f32");
    // Per step: every host wait (synchronisation) and, in brackets, the downloads among them.
    const auto per_step = [&](const HostWaits& w) {
      return fmt::format("{:g}({:g})", static_cast<double>(w.synchronizations) / n,
                         static_cast<double>(w.downloads) / n);
    };
    if (device.is_cuda())
      fmt::print("host_waits_per_step fwd={} bwd={} opt={} (synchronisations (downloads) in the step itself; "
                 "ATTNLAB_TRACE_HOST_WAITS=1 prints where each one comes from)\n",
                 per_step(fwd_waits), per_step(bwd_waits), per_step(opt_waits));
    if (bf16_operands)
      fmt::print("bf16_operands_per_step cast={} reused={} provided={} (the forward's GEMM operands in bf16: cast, "
                 "taken again, taken from the optimizer's copies)\n",
                 operand_counts.cast, operand_counts.reused, operand_counts.provided);
    if (profile::enabled()) fmt::print("\nforward (fwd) and backward (bwd) by op, per step (ATTNLAB_PROFILE=1: each op timed alone)\n{}", profile::table(n));
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_train_step: error: {}\n", e.what());
    return 1;
  }
}
