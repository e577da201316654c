// Attention-core throughput of the attention plugins: forward and forward+backward TFLOP/s of
// Attention::attend (q, k, v [B, h, T, d] -> [B, h, T, d], no projections) for each plugin named,
// head sizes 64 and 128, sequence lengths 32 .. 4096 (powers of two), causal and not. A plain
// program whose output lines match bench/pytorch_sdpa.py; bench/attention_compare.sh runs both and
// prints one table. See bench/README.md. On CUDA, --dtype auto gives `flash` bf16, which at both
// head sizes runs its tensor-core kernels (--dtype f32: its FMA kernels).
//
// With --positional NAME (alibi, relative, rope) the core applies that scheme's part inside
// attention (AttentionCore::positions) and lines name the plugin as impl=PLUGIN+NAME; plugins that
// do not serve the scheme on the device are skipped with the reason. With --expr NAME the core
// applies a score expression instead (AttentionCore::expressions; impl=PLUGIN+expr:NAME), one of
//   score    score_mod = "score" (the plain score, through the expression machinery)
//   alibi    score_mod = "score - slope[h] * abs(q_idx - kv_idx)", slope = ALiBi's slopes
//   softcap  score_mod = "30 * tanh(score / 30)"
//   t5       score_mod = "score + bias[h, clamp(kv_idx - q_idx, -32, 32) + 32]", bias learned
//   temp     score_mod = "score * temp[h]", temp learned
//   window   mask_mod  = "kv_idx == 0 || abs(q_idx - kv_idx) <= 128" (a sliding window with a sink)
// The FLOPs of a line are those of the attention it replaces (a window's skipped tiles count).
//
// FLOPs: 4 B h T^2 d for the forward (Q K^T and P V, 2 B h T^2 d each), halved when causal; the
// backward counts 2.5 times the forward, so forward+backward is 3.5 times the forward (position
// terms are not counted).
//
//   bench_attention [--device cpu|cuda:N] [--plugins a,b,..] [--dims 64,128] [--min-len N]
//                   [--max-len N] [--tokens N] [--warmup W] [--iters I] [--threads N] [--dtype auto|f32|bf16]
//                   [--positional NAME] [--expr NAME]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "attnlab/attnlab.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/init.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/plugin/loader.h"
#include "attnlab/precision.h"

namespace {

using namespace attnlab;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  Device device = Device::cpu();
  std::vector<std::string> plugins{"scaled_dot", "flash", "cudnn"};
  std::vector<std::int64_t> dims{64, 128};
  std::int64_t min_len = 32, max_len = -1;  // -1: 4096 on CUDA, 512 on the CPU
  std::int64_t tokens = -1;                 // B * T; -1: 16384 on CUDA, 4096 on the CPU
  int warmup = -1, iters = -1;              // -1: 3 / 10 on CUDA, 1 / 3 on the CPU
  int threads = 2;
  std::string dtype = "auto";  // auto: bf16 where the plugin takes it on CUDA, else f32
  std::string positional;      // empty: no positions inside attention
  std::string expr;            // empty: no score expression
};

[[noreturn]] void usage(const std::string& msg) {
  fmt::print(stderr,
             "bench_attention: {}\nusage: bench_attention [--device cpu|cuda:N] [--plugins a,b,..] [--dims 64,128] "
             "[--min-len N] [--max-len N] [--tokens N] [--warmup W] [--iters I] [--threads N] "
             "[--dtype auto|f32|bf16] [--positional NAME] [--expr score|alibi|softcap|t5|temp|window]\n",
             msg);
  std::exit(2);
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from <= s.size()) {
    const std::size_t comma = std::min(s.find(',', from), s.size());
    if (comma > from) out.push_back(s.substr(from, comma - from));
    from = comma + 1;
  }
  return out;
}

BenchOptions parse(int argc, char** argv) {
  BenchOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("missing value after " + a);
    const std::string v = argv[++i];
    if (a == "--device") o.device = Device::parse(v);
    else if (a == "--plugins") o.plugins = split_list(v);
    else if (a == "--dims") {
      o.dims.clear();
      for (const auto& d : split_list(v)) o.dims.push_back(std::atoll(d.c_str()));
    } else if (a == "--min-len") o.min_len = std::atoll(v.c_str());
    else if (a == "--max-len") o.max_len = std::atoll(v.c_str());
    else if (a == "--tokens") o.tokens = std::atoll(v.c_str());
    else if (a == "--warmup") o.warmup = std::atoi(v.c_str());
    else if (a == "--iters") o.iters = std::atoi(v.c_str());
    else if (a == "--threads") o.threads = std::atoi(v.c_str());
    else if (a == "--dtype") o.dtype = v;
    else if (a == "--positional") o.positional = v;
    else if (a == "--expr") o.expr = v;
    else usage("unknown option " + a);
  }
  const bool gpu = o.device.is_cuda();
  if (o.max_len < 0) o.max_len = gpu ? 4096 : 512;
  if (o.tokens < 0) o.tokens = gpu ? 16384 : 4096;
  if (o.warmup < 0) o.warmup = gpu ? 3 : 1;
  if (o.iters < 0) o.iters = gpu ? 10 : 3;
  if (o.min_len < 1 || o.max_len < o.min_len || o.tokens < 1 || o.iters < 1 || o.threads < 1 || o.dims.empty())
    usage("bad value");
  for (std::int64_t d : o.dims)
    if (d < 1 || 1024 % d != 0) usage(fmt::format("head size {} does not divide 1024", d));
  if (o.dtype != "auto" && o.dtype != "f32" && o.dtype != "bf16") usage("--dtype must be auto, f32 or bf16");
  return o;
}

bool contains(const auto& list, const auto& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

struct Shape4 {
  std::int64_t b, h, t, d;
};

// Milliseconds per call of fn, after `warmup` untimed calls, waiting for the device at both ends.
template <typename Fn>
double time_ms(Device device, int warmup, int iters, Fn&& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  synchronize(device);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  synchronize(device);
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters;
}

Tensor random_heads(const Shape4& s, std::uint64_t seed, DType dtype, Device device) {
  Generator g(seed);
  return uniform({s.b, s.h, s.t, s.d}, -1.0, 1.0, g, DType::f32).to(dtype).to(device);
}

// The --expr variant for h heads, with its tensors (learned ones requiring grad) in dtype on device.
std::unique_ptr<expr::ScoreExprCall> expression(const std::string& name, std::int64_t h, const BenchOptions& o,
                                                DType dtype) {
  if (name.empty()) return nullptr;
  expr::SiteExprs site;
  std::vector<expr::TensorSpec> tensors;
  auto tensor = [&](const char* t, std::vector<std::int64_t> shape, expr::TensorInit init, bool learned) {
    expr::TensorSpec spec;
    spec.name = t;
    spec.shape = std::move(shape);
    spec.per_head.assign(spec.shape.size(), false);
    spec.init = init;
    spec.learned = learned;
    tensors.push_back(spec);
  };
  if (name == "score") site.score_mod.text = "score";
  else if (name == "alibi") {
    site.score_mod.text = "score - slope[h] * abs(q_idx - kv_idx)";
    tensor("slope", {h}, expr::TensorInit::alibi_slopes, false);
  } else if (name == "softcap") site.score_mod.text = "30 * tanh(score / 30)";
  else if (name == "t5") {
    site.score_mod.text = "score + bias[h, clamp(kv_idx - q_idx, -32, 32) + 32]";
    tensor("bias", {h, 65}, expr::TensorInit::normal, true);
  } else if (name == "temp") {
    site.score_mod.text = "score * temp[h]";
    tensor("temp", {h}, expr::TensorInit::alibi_slopes, true);
  } else if (name == "window") site.mask_mod.text = "kv_idx == 0 || abs(q_idx - kv_idx) <= 128";
  else usage("unknown --expr " + name);
  auto call = std::make_unique<expr::ScoreExprCall>();
  call->expr = expr::ScoreExpr::build(site, tensors, {h, o.max_len});
  Generator g(7);
  for (const auto& spec : call->expr->tensors()) {
    Tensor t = expr::initial_tensor(spec, g, DType::f32, o.device).to(dtype);
    if (spec.learned) t.set_requires_grad();
    call->tensors.push_back(t);
  }
  return call;
}

// Runs every length, causal setting and pass for one plugin and head size; prints one line each.
void bench_plugin(Attention& module, const std::string& name, DType dtype, std::int64_t d, const BenchOptions& o,
                  const AttentionPositions* positions) {
  const std::int64_t h = 1024 / d;  // d_model 1024: 16 heads of 64, 8 heads of 128
  for (std::int64_t t = o.min_len; t <= o.max_len; t *= 2) {
    const Shape4 s{std::max<std::int64_t>(1, o.tokens / t), h, t, d};
    Tensor q = random_heads(s, 1, dtype, o.device), k = random_heads(s, 2, dtype, o.device),
           v = random_heads(s, 3, dtype, o.device);
    const Tensor grad = random_heads(s, 4, dtype, o.device);
    for (Tensor* x : {&q, &k, &v}) x->set_requires_grad();
    const auto expressions = expression(o.expr, h, o, dtype);
    for (bool causal : {false, true}) {
      const double fwd_flops = 4.0 * static_cast<double>(s.b * s.h) * static_cast<double>(t * t) *
                               static_cast<double>(d) * (causal ? 0.5 : 1.0);
      const AttentionCore core{.query = q,
                               .key = k,
                               .value = v,
                               .causal = causal,
                               .positions = positions,
                               .expressions = expressions.get()};
      const double fwd_ms = time_ms(o.device, o.warmup, o.iters, [&] {
        NoGradGuard no_grad;
        Tensor out = module.attend(core);
      });
      const double train_ms = time_ms(o.device, o.warmup, o.iters, [&] {
        Tensor out = module.attend(core);
        out.backward(grad);
        for (Tensor* x : {&q, &k, &v}) x->zero_grad();
        if (expressions)
          for (Tensor& x : expressions->tensors)
            if (x.requires_grad()) x.zero_grad();
      });
      for (const auto& [pass, ms, flops] : {std::tuple{"fwd", fwd_ms, fwd_flops}, std::tuple{"fwd+bwd", train_ms, 3.5 * fwd_flops}})
        fmt::print("impl={} device={} dtype={} d={} T={} causal={} pass={} B={} h={} ms={:.4f} tflops={:.4f}\n", name,
                   o.device.str(), dtype_name(dtype), d, t, causal ? 1 : 0, pass, s.b, s.h, ms, flops / (ms * 1e9));
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const BenchOptions o = parse(argc, argv);
  try {
    check_device_available(o.device);
  } catch (const Error& e) {
    fmt::print(stderr, "bench_attention: {}\n", e.what());
    return 1;
  }
  set_num_threads(o.threads);
  Registry registry;
  PluginLoader loader(registry);
  // The build tree's plugins where this binary was built; otherwise $ATTNLAB_PLUGIN_PATH and the
  // folder next to the core library (a packed or installed copy).
  if (std::filesystem::is_directory(ATTNLAB_BENCH_PLUGIN_DIR)) loader.add_search_path(ATTNLAB_BENCH_PLUGIN_DIR);
  loader.load_all();
  for (const auto& f : loader.failures()) fmt::print(stderr, "plugin {}: {}\n", f.path, f.message);
  fmt::print("# attention core: FLOPs 4 B h T^2 d forward (halved when causal), backward 2.5x forward; B = {} / T, "
             "h = 1024 / d; {} threads\n",
             o.tokens, o.threads);

  for (const auto& name : o.plugins) {
    if (!registry.contains(PluginFamily::attention, name)) {
      fmt::print("# skip {}: not registered (not built here, or not on the plugin search path)\n", name);
      continue;
    }
    // What the plugin declares for the device (PluginInfo::capabilities).
    const AttentionDeviceSupport* support =
        registry.find(PluginFamily::attention, name).capabilities.on(o.device.kind);
    if (!support) {
      fmt::print("# skip {}: it does not run on {}\n", name, o.device.str());
      continue;
    }
    DType dtype = o.dtype == "bf16" ? DType::bf16 : DType::f32;
    if (o.dtype == "auto" && o.device.is_cuda() && contains(support->dtypes, DType::bf16)) dtype = DType::bf16;
    if (!contains(support->dtypes, dtype)) {
      fmt::print("# skip {}: dtype {} not supported on {}\n", name, dtype_name(dtype), o.device.str());
      continue;
    }
    for (std::int64_t d : o.dims) {
      if (!support->head_dims.empty() && !contains(support->head_dims, d)) {
        fmt::print("# skip {} d={}: head size not supported on {}\n", name, d, o.device.str());
        continue;
      }
      Generator init(1), dropout(2);
      BuildContext ctx;
      ctx.dims = {.d_model = 1024, .n_heads = 1024 / d, .d_k = d, .d_v = d, .d_ff = 4096, .max_length = o.max_len};
      ctx.dropout = {.residual = 0, .embedding = 0, .attention = 0, .ffn = 0};
      ctx.device = o.device;
      ctx.init = &init;
      ctx.dropout_rng = &dropout;
      ctx.registry = &registry;
      try {
        // The scheme's part inside attention, built with the bench's dimensions.
        std::shared_ptr<AttentionPositions> positions;
        std::string label = name;
        if (!o.positional.empty()) {
          const PluginInfo& scheme = registry.find(PluginFamily::positional, o.positional);
          const AttentionNeeds needs{.positions = scheme.positions, .positional = o.positional};
          if (auto why = check_attention_support(registry.find(PluginFamily::attention, name), o.device, dtype, d, d,
                                                 needs)) {
            fmt::print("# skip {} d={}: {}\n", name, d, *why);
            continue;
          }
          BuildContext scheme_ctx = ctx;  // its parameters (relative's tables) in the bench's dtype
          scheme_ctx.dtype = dtype;
          scheme_ctx.options = Options::with_defaults(scheme.options);
          positions = registry.make_positional(o.positional, scheme_ctx)->attention_positions(scheme_ctx);
          label += "+" + o.positional;
        }
        if (!o.expr.empty()) {
          if (!support->score_expressions) {
            fmt::print("# skip {} d={}: it does not apply score expressions on {}\n", name, d, o.device.str());
            continue;
          }
          label += "+expr:" + o.expr;
        }
        ctx.options = Options::with_defaults(registry.find(PluginFamily::attention, name).options);
        std::shared_ptr<Attention> module = registry.make_attention(name, ctx);
        module->eval();
        if (positions) positions->eval();
        // bf16 tensors run under bf16 precision, as in a bf16 model: the positional terms' products
        // (relative's q . a^K) are core matmuls, which give bf16 outputs only there.
        const PrecisionGuard precision(dtype == DType::bf16 ? Precision::bf16 : compute_precision());
        bench_plugin(*module, label, dtype, d, o, positions.get());
      } catch (const Error& e) {
        fmt::print("# skip {} d={}: {}\n", name, d, e.what());
      }
    }
  }
  return 0;
}
