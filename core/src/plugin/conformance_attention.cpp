// Conformance checks of the attention family.
#include <algorithm>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "attnlab/ops.h"
#include "attnlab/testing/gradcheck.h"
#include "plugin/conformance_support.h"

namespace attnlab::conformance {
namespace {

constexpr std::int64_t kB = 2, kTq = 4, kTk = 5, kD = 8;

// The largest difference between two computations that must agree up to rounding.
double tolerance(const ConformanceOptions& options) {
  if (options.tolerance > 0) return options.tolerance;
  switch (options.dtype) {
    case DType::f64: return 1e-10;
    case DType::f32: return 1e-5;
    default: return 3e-2;
  }
}

// Values uniform in [-1, 1) from seed, of the kit's dtype on its device.
Tensor input(const Shape& shape, std::uint64_t seed, const ConformanceOptions& options) {
  return random_input(shape, seed, options.device).to(options.dtype);
}

// Empty when the plugin's capabilities cover the kit's device and dtype; else what they cover.
std::string unsupported(const AttentionCapabilities& caps, const ConformanceOptions& options) {
  const bool device = std::find(caps.devices.begin(), caps.devices.end(), options.device.kind) != caps.devices.end();
  const bool dtype = std::find(caps.dtypes.begin(), caps.dtypes.end(), options.dtype) != caps.dtypes.end();
  if (device && dtype) return {};
  std::vector<std::string_view> devices, dtypes;
  for (DeviceKind k : caps.devices) devices.push_back(kDeviceKindNames[static_cast<std::size_t>(k)]);
  for (DType t : caps.dtypes) dtypes.push_back(dtype_name(t));
  return fmt::format("the kit ran on {} in {}, but the plugin supports devices [{}] and dtypes [{}]",
                     options.device.str(), dtype_name(options.dtype), fmt::join(devices, ", "), fmt::join(dtypes, ", "));
}

struct Instance {
  std::unique_ptr<Generator> init, dropout;
  std::shared_ptr<Attention> module;
};

Instance build(const Registry& registry, const std::string& name, const ConformanceOptions& options,
               std::uint64_t seed, double attention_dropout = 0.0) {
  Instance in{std::make_unique<Generator>(seed), std::make_unique<Generator>(seed + 1000), nullptr};
  BuildContext ctx =
      small_context(registry, PluginFamily::attention, name, options, *in.init, *in.dropout, options.dtype);
  ctx.seed = seed;
  ctx.dropout.attention = attention_dropout;
  in.module = registry.make_attention(name, ctx);
  in.module->eval();
  return in;
}

// [B, Tk] additive mask: key `pad_from..` of batch row `row` is padding.
Tensor padding_mask(std::int64_t row, std::int64_t pad_from, const ConformanceOptions& options) {
  std::vector<double> m(static_cast<std::size_t>(kB * kTk), 0.0);
  for (std::int64_t j = pad_from; j < kTk; ++j)
    m[static_cast<std::size_t>(row * kTk + j)] = -std::numeric_limits<double>::infinity();
  return Tensor::from_vector<double>({kB, kTk}, m).to(options.dtype).to(options.device);
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

}  // namespace

void check_attention(const Registry& registry, const std::string& name,
                     const ConformanceOptions& options, ConformanceReport& report) {
  const Device dev = options.device;
  const double tol = tolerance(options);
  try {
    const std::string why = unsupported(build(registry, name, options, 5).module->capabilities(), options);
    if (!why.empty()) {
      report.not_applicable = why;
      return;
    }
  } catch (const std::exception& e) {
    report.checks.push_back({fmt::format("builds with the kit's dimensions (d_model {}, h 2, d_k {}, d_v {}, {})",
                                         kD, options.d_k, options.d_v, dtype_name(options.dtype)),
                             false, e.what()});
    return;
  }
  const Tensor q = input({kB, kTq, kD}, 1, options);
  const Tensor kv = input({kB, kTk, kD}, 2, options);
  const Tensor x = input({kB, kTk, kD}, 3, options);

  run_check(report, "output shapes", [&] {
    auto a = build(registry, name, options, 5);
    Tensor self = a.module->forward({.query = x, .key = x, .value = x});
    Tensor cross = a.module->forward({.query = q, .key = kv, .value = kv});
    if (self.shape() != Shape({kB, kTk, kD})) return fmt::format("self-attention gave {}", self.shape().str());
    if (cross.shape() != Shape({kB, kTq, kD})) return fmt::format("cross-attention gave {}", cross.shape().str());
    return std::string();
  });

  run_check(report, "gradients of inputs and parameters (finite differences)", [&]() -> std::string {
    // Finite differences run on the host reference in f64.
    if (!dev.is_cpu() || options.dtype != DType::f64) return {};
    auto a = build(registry, name, options, 5);
    Tensor mask = padding_mask(1, 3, options);
    auto result = testing::gradcheck(
        [&](const std::vector<Tensor>& in) {
          return a.module->forward({.query = in[0], .key = in[1], .value = in[1], .key_padding_mask = mask});
        },
        {q, kv}, {}, a.module->parameters());
    return result.ok ? std::string() : result.message;
  });

  run_check(report, "padding keys receive zero weight", [&] {
    auto a = build(registry, name, options, 5);
    Tensor mask = padding_mask(0, 3, options);
    Tensor before = a.module->forward({.query = q, .key = kv, .value = kv, .key_padding_mask = mask});
    Tensor changed = perturb_from(kv, 0, 3, 77);
    Tensor after = a.module->forward({.query = q, .key = changed, .value = changed, .key_padding_mask = mask});
    return compare(before, after, tol, "output after changing padded keys and values");
  });

  run_check(report, "causal masking hides later positions", [&] {
    auto a = build(registry, name, options, 5);
    Tensor before = a.module->forward({.query = x, .key = x, .value = x, .causal = true});
    Tensor changed = perturb_from(x, -1, 3, 78);
    Tensor after = a.module->forward({.query = changed, .key = changed, .value = changed, .causal = true});
    return compare(slice_time(before, 0, 3), slice_time(after, 0, 3), tol,
                   "outputs at positions 0..2 after changing positions 3..4");
  });

  run_check(report, "incremental self-attention equals full decoding", [&] {
    auto a = build(registry, name, options, 5);
    Tensor full = a.module->forward({.query = x, .key = x, .value = x, .causal = true});
    KVCache cache;
    std::vector<Tensor> steps;
    for (std::int64_t t = 0; t < kTk; ++t) {
      Tensor s = slice_time(x, t, t + 1);
      steps.push_back(a.module->forward({.query = s, .key = s, .value = s, .causal = true, .cache = &cache}));
    }
    return compare(full, concat(steps, 1), tol, "step-by-step output");
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
    return compare(full, concat(steps, 1), tol, "step-by-step output");
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
    return compare(slice_time(full, 2, kTk), concat(later, 1), tol, "outputs after the reorder");
  });

  run_check(report, "same seed gives the same parameters and output", [&]() -> std::string {
    // With attention dropout where the plugin supports it, so that the masks must repeat too.
    const double rate = build(registry, name, options, 11).module->capabilities().attention_dropout ? 0.2 : 0.0;
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
}

}  // namespace attnlab::conformance
