// Conformance checks of the attention family.
#include <algorithm>
#include <limits>
#include <memory>

#include "attnlab/ops.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/testing/gradcheck.h"
#include "plugin/conformance_support.h"

namespace attnlab::conformance {
namespace {

constexpr std::int64_t kB = 2, kTq = 4, kTk = 5, kD = 8;

// [B, Tk] additive mask: key `pad_from..` of batch row `row` is padding.
Tensor padding_mask(std::int64_t row, std::int64_t pad_from, Device device, DType dtype) {
  std::vector<double> m(static_cast<std::size_t>(kB * kTk), 0.0);
  for (std::int64_t j = pad_from; j < kTk; ++j)
    m[static_cast<std::size_t>(row * kTk + j)] = -std::numeric_limits<double>::infinity();
  return Tensor::from_vector<double>({kB, kTk}, m).to(dtype).to(device);
}

// x with positions [from, T) of every batch row replaced by other values.
Tensor perturb_from(const Tensor& x, std::int64_t row, std::int64_t from, std::uint64_t seed) {
  auto v = x.to_vector<double>();
  Tensor noise = random_input(x.shape(), seed, Device::cpu());
  const auto n = noise.to_vector<double>();
  const std::int64_t t = x.dim(1), d = x.dim(2);
  for (std::int64_t b = 0; b < x.dim(0); ++b) {
    if (row >= 0 && b != row) continue;
    for (std::int64_t i = from; i < t; ++i)
      for (std::int64_t k = 0; k < d; ++k) {
        const auto at = static_cast<std::size_t>((b * t + i) * d + k);
        v[at] = n[at];
      }
  }
  return Tensor::from_vector<double>(x.shape(), v).to(x.dtype()).to(x.device());
}

Tensor swap_rows(const Tensor& x) {
  auto parts = split(x, 0, {1, x.dim(0) - 1});
  return concat({parts[1], parts[0]}, 0);
}

double tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f64: return 1e-10;
    case DType::f32: return 1e-4;
    default: return 5e-2;
  }
}

}  // namespace

AttentionSetup attention_setup(const Registry& registry, const std::string& name, const ConformanceOptions& options) {
  AttentionSetup setup;
  const AttentionDeviceSupport* s = registry.find(PluginFamily::attention, name).capabilities.on(options.device.kind);
  if (options.dtype) setup.dtype = *options.dtype;
  else if (s && std::find(s->dtypes.begin(), s->dtypes.end(), DType::f64) == s->dtypes.end() && !s->dtypes.empty())
    setup.dtype = std::find(s->dtypes.begin(), s->dtypes.end(), DType::f32) != s->dtypes.end() ? DType::f32 : s->dtypes[0];
  if (s && !s->head_dims.empty()) {
    std::vector<std::int64_t> sizes = s->head_dims;
    std::sort(sizes.begin(), sizes.end());
    setup.d_k = sizes[0];
    setup.d_v = sizes.size() > 1 ? sizes[1] : sizes[0];
  }
  if (options.d_k > 0) setup.d_k = options.d_k;
  if (options.d_v > 0) setup.d_v = options.d_v;
  // A plugin that computes in a coarser dtype than its tensors' is held to the coarser tolerance.
  const double computed = s && s->compute_dtype ? tolerance_for(*s->compute_dtype) : 0.0;
  setup.tol = options.tolerance > 0 ? options.tolerance : std::max(tolerance_for(setup.dtype), computed);
  return setup;
}

AttentionInstance build_attention(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                                  const AttentionSetup& setup, std::uint64_t seed, double attention_dropout,
                                  std::shared_ptr<const expr::ScoreExpr> expressions) {
  AttentionInstance in{std::make_unique<Generator>(seed), std::make_unique<Generator>(seed + 1000), nullptr};
  BuildContext ctx =
      small_context(registry, PluginFamily::attention, name, options, *in.init, *in.dropout, setup.dtype);
  ctx.dims.d_k = setup.d_k;
  ctx.dims.d_v = setup.d_v;
  ctx.seed = seed;
  ctx.dropout.attention = attention_dropout;
  // Options the plugin does not declare (a reference plugin's view of the options) are left out.
  std::map<std::string, OptionValue> own;
  for (const auto& spec : registry.find(PluginFamily::attention, name).options)
    if (auto it = options.options.find(spec.name); it != options.options.end()) own[spec.name] = it->second;
  ctx.options = Options::with_defaults(registry.find(PluginFamily::attention, name).options, own);
  ctx.score_expr = std::move(expressions);
  in.module = registry.make_attention(name, ctx);
  in.module->eval();
  return in;
}

void check_attention(const Registry& registry, const std::string& name,
                     const ConformanceOptions& options, ConformanceReport& report) {
  const Device dev = options.device;
  const AttentionSetup setup = attention_setup(registry, name, options);
  const DType dt = setup.dtype;
  const double kTol = setup.tol;
  auto build = [&](const Registry& reg, const std::string& plugin, const ConformanceOptions& opts, std::uint64_t seed,
                   double attention_dropout = 0.0) {
    return build_attention(reg, plugin, opts, setup, seed, attention_dropout);
  };
  auto compare = [](const Tensor& a, const Tensor& b, double tol, const std::string& what) {
    return compare_close(a, b, tol, what);
  };
  const Tensor q = random_input({kB, kTq, kD}, 1, dev).to(dt);
  const Tensor kv = random_input({kB, kTk, kD}, 2, dev).to(dt);
  const Tensor x = random_input({kB, kTk, kD}, 3, dev).to(dt);

  run_check(report, fmt::format("serves the kit's model on {} ({}, d_k {}, d_v {})", dev.str(), dtype_name(dt),
                                setup.d_k, setup.d_v),
            [&]() -> std::string {
              const auto problem = check_attention_support(registry.find(PluginFamily::attention, name), dev, dt,
                                                           setup.d_k, setup.d_v);
              return problem ? *problem : std::string();
            });

  run_check(report, "output shapes", [&] {
    auto a = build(registry, name, options, 5);
    Tensor self = a.module->forward({.query = x, .key = x, .value = x});
    Tensor cross = a.module->forward({.query = q, .key = kv, .value = kv});
    if (self.shape() != Shape({kB, kTk, kD})) return fmt::format("self-attention gave {}", self.shape().str());
    if (cross.shape() != Shape({kB, kTq, kD})) return fmt::format("cross-attention gave {}", cross.shape().str());
    return std::string();
  });

  run_check(report, "gradients of inputs and parameters (finite differences)", [&]() -> std::string {
    if (!dev.is_cpu() || dt != DType::f64) return {};  // finite differences run on the host, in f64
    auto a = build(registry, name, options, 5);
    Tensor mask = padding_mask(1, 3, dev, dt);
    auto result = testing::gradcheck(
        [&](const std::vector<Tensor>& in) {
          return a.module->forward({.query = in[0], .key = in[1], .value = in[1], .key_padding_mask = mask});
        },
        {q, kv}, {}, a.module->parameters());
    return result.ok ? std::string() : result.message;
  });

  run_check(report, "padding keys receive zero weight", [&] {
    auto a = build(registry, name, options, 5);
    Tensor mask = padding_mask(0, 3, dev, dt);
    Tensor before = a.module->forward({.query = q, .key = kv, .value = kv, .key_padding_mask = mask});
    Tensor changed = perturb_from(kv, 0, 3, 77);
    Tensor after = a.module->forward({.query = q, .key = changed, .value = changed, .key_padding_mask = mask});
    return compare(before, after, kTol, "output after changing padded keys and values");
  });

  run_check(report, "causal masking hides later positions", [&] {
    auto a = build(registry, name, options, 5);
    Tensor before = a.module->forward({.query = x, .key = x, .value = x, .causal = true});
    Tensor changed = perturb_from(x, -1, 3, 78);
    Tensor after = a.module->forward({.query = changed, .key = changed, .value = changed, .causal = true});
    return compare(slice_time(before, 0, 3), slice_time(after, 0, 3), kTol,
                   "outputs at positions 0..2 after changing positions 3..4");
  });

  run_check(report, "incremental self-attention equals full decoding", [&] {
    auto a = build(registry, name, options, 5);
    Tensor full = a.module->forward({.query = x, .key = x, .value = x, .causal = true});
    return compare(full, step_by_step(*a.module, x), kTol, "step-by-step output");
  });

  run_check(report, "incremental cross-attention with a static cache equals full", [&] {
    auto a = build(registry, name, options, 5);
    Tensor full = a.module->forward({.query = q, .key = kv, .value = kv});
    KVCache cache;
    cache.static_kv = true;
    std::vector<Tensor> steps;
    for (std::int64_t t = 0; t < kTq; ++t) {
      Tensor s = slice_time(q, t, t + 1);
      steps.push_back(a.module->forward({.query = s, .key = kv, .value = kv, .cache = &cache}));
    }
    return compare(full, concat(steps, 1), kTol, "step-by-step output");
  });

  run_check(report, "a reordered cache continues the reordered batch", [&] {
    auto a = build(registry, name, options, 5);
    Tensor swapped = swap_rows(x);
    Tensor full = a.module->forward({.query = swapped, .key = swapped, .value = swapped, .causal = true});
    KVCache cache;
    std::vector<Tensor> later;
    for (std::int64_t t = 0; t < kTk; ++t) {
      if (t == 2) cache.reorder({1, 0});
      Tensor s = slice_time(t < 2 ? x : swapped, t, t + 1);
      Tensor out = a.module->forward({.query = s, .key = s, .value = s, .causal = true, .cache = &cache});
      if (t >= 2) later.push_back(out);
    }
    return compare(slice_time(full, 2, kTk), concat(later, 1), kTol, "outputs after the reorder");
  });

  run_check(report, "same seed gives the same parameters and output", [&]() -> std::string {
    // With attention dropout where the plugin serves it, so that the masks must repeat too.
    const AttentionDeviceSupport* support =
        registry.find(PluginFamily::attention, name).capabilities.on(dev.kind);
    const double rate = !support || support->attention_dropout ? 0.2 : 0.0;
    auto a = build(registry, name, options, 11, rate);
    auto b = build(registry, name, options, 11, rate);
    auto c = build(registry, name, options, 12, rate);
    a.module->train();
    b.module->train();
    const auto pa = a.module->named_parameters(), pb = b.module->named_parameters(),
               pc = c.module->named_parameters();
    if (pa.size() != pb.size()) return "two builds with one seed have different parameter lists";
    bool any_differs = pa.empty();
    for (std::size_t i = 0; i < pa.size(); ++i) {
      auto m = compare(pa[i].second, pb[i].second, 0.0, "parameter " + pa[i].first);
      if (!m.empty()) return m;
      if (!compare(pa[i].second, pc[i].second, 0.0, "").empty()) any_differs = true;
    }
    if (!any_differs) return "seeds 11 and 12 gave identical parameters";
    Tensor oa = a.module->forward({.query = q, .key = kv, .value = kv});
    Tensor ob = b.module->forward({.query = q, .key = kv, .value = kv});
    return compare(oa, ob, 0.0, fmt::format("training-mode output (attention dropout {})", rate));
  });

  check_attention_positions(registry, name, options, setup, report);
  check_attention_expressions(registry, name, options, setup, report);
  if (!options.reference.empty()) check_attention_reference(registry, name, options, setup, report);
}

}  // namespace attnlab::conformance
