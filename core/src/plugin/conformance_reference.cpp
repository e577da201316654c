// Conformance of an attention plugin against a reference plugin (ConformanceOptions::reference):
// built with the same seed and options, the two must hold the same parameters and give the same
// outputs and gradients (inputs and parameters), up to the element type's tolerance. A plugin
// that computes the same function differently (a fused kernel against the composition of core
// ops) is checked this way.
#include <limits>

#include "attnlab/autograd.h"
#include "attnlab/error.h"
#include "attnlab/ops.h"
#include "plugin/conformance_support.h"

namespace attnlab::conformance {
namespace {

constexpr std::int64_t kB = 3, kTq = 4, kTk = 6, kD = 8;

// [B, Tk] additive mask: batch row 0 sees its first 4 keys, row 1 all, row 2 its first 2.
Tensor padding_mask(Device device, DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> m(static_cast<std::size_t>(kB * kTk), 0.0);
  for (std::int64_t j = 0; j < kTk; ++j) {
    if (j >= 4) m[static_cast<std::size_t>(j)] = -inf;
    if (j >= 2) m[static_cast<std::size_t>(2 * kTk + j)] = -inf;
  }
  return Tensor::from_vector<double>({kB, kTk}, m).to(dtype).to(device);
}

Tensor leaf(const Shape& shape, std::uint64_t seed, Device device, DType dtype) {
  Tensor t = random_input(shape, seed, device).to(dtype);
  t.set_requires_grad();
  return t;
}

struct Scenario {
  const char* name;
  bool self;     // query = key = value (else cross-attention: keys from another sequence)
  bool mask;     // key padding mask
  bool causal;
};

// Runs one scenario on a fresh pair of builds and compares outputs and gradients.
std::string compare_scenario(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                             const AttentionSetup& setup, const Scenario& s) {
  const Device dev = options.device;
  const DType dt = setup.dtype;
  auto run = [&](const std::string& plugin) {
    auto a = build_attention(registry, plugin, options, setup, 21);
    const Tensor q = leaf({kB, s.self ? kTk : kTq, kD}, 31, dev, dt);
    const Tensor kv = s.self ? q : leaf({kB, kTk, kD}, 32, dev, dt);
    AttentionInputs in{.query = q, .key = kv, .value = kv, .causal = s.causal};
    if (s.mask) in.key_padding_mask = padding_mask(dev, dt);
    Tensor out = a.module->forward(in);
    // L = <w, out> with a fixed w: every input and parameter gradient is one backward away.
    out.backward(random_input(out.shape(), 33, dev).to(dt));
    struct Result {
      Tensor out, dq, dkv;
      std::vector<std::pair<std::string, Tensor>> params;
    };
    return Result{out.detach(), q.grad(), s.self ? Tensor() : kv.grad(), a.module->named_parameters()};
  };
  const auto got = run(name);
  const auto want = run(options.reference);
  if (auto m = compare_close(got.out, want.out, setup.tol, "output"); !m.empty()) return m;
  if (auto m = compare_close(got.dq, want.dq, setup.tol, "gradient of the query"); !m.empty()) return m;
  if (!s.self)
    if (auto m = compare_close(got.dkv, want.dkv, setup.tol, "gradient of the keys and values"); !m.empty()) return m;
  for (std::size_t i = 0; i < got.params.size(); ++i) {
    const Tensor g = got.params[i].second.grad(), w = want.params[i].second.grad();
    if (g.defined() != w.defined())
      return fmt::format("parameter {} has a gradient in one plugin only", got.params[i].first);
    if (!g.defined()) continue;
    if (auto m = compare_close(g, w, setup.tol, "gradient of " + got.params[i].first); !m.empty()) return m;
  }
  return {};
}

}  // namespace

void check_attention_reference(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                               const AttentionSetup& setup, ConformanceReport& report) {
  const std::string ref = options.reference;
  registry.find(PluginFamily::attention, ref);  // an unknown reference throws with the list of plugins

  run_check(report, fmt::format("same parameters as reference {} for one seed", ref), [&]() -> std::string {
    auto a = build_attention(registry, name, options, setup, 21);
    auto b = build_attention(registry, ref, options, setup, 21);
    const auto pa = a.module->named_parameters(), pb = b.module->named_parameters();
    if (pa.size() != pb.size())
      return fmt::format("{} parameters against {} in {}", pa.size(), pb.size(), ref);
    for (std::size_t i = 0; i < pa.size(); ++i) {
      if (pa[i].first != pb[i].first)
        return fmt::format("parameter {} is {} in {}", i, pb[i].first, ref) + fmt::format(" but {} here", pa[i].first);
      if (auto m = compare_close(pa[i].second, pb[i].second, 0.0, "parameter " + pa[i].first); !m.empty()) return m;
    }
    return {};
  });

  const Scenario scenarios[] = {{"self-attention", true, false, false},
                                {"cross-attention", false, false, false},
                                {"cross-attention with a padding mask", false, true, false},
                                {"causal self-attention with a padding mask", true, true, true},
                                // Tq < Tk: query i sees keys j <= i + Tk - Tq (the diagonal aligned
                                // bottom-right, as when a cache holds earlier positions).
                                {"causal queries over a longer key sequence", false, false, true},
                                {"causal queries over a longer padded key sequence", false, true, true}};
  const AttentionDeviceSupport* support =
      registry.find(PluginFamily::attention, name).capabilities.on(options.device.kind);
  for (const Scenario& s : scenarios) {
    // A plugin that declares the case unsupported must refuse it with an Error, never answer it.
    const bool longer_padded = !s.self && s.mask && s.causal;
    if (longer_padded && support && !support->causal_longer_padded_keys) {
      run_check(report, fmt::format("refuses {}, as it declares", s.name), [&]() -> std::string {
        try {
          compare_scenario(registry, name, options, setup, s);
        } catch (const Error&) {
          return {};
        }
        return "it answered a call that its capabilities say it does not serve";
      });
      continue;
    }
    run_check(report, fmt::format("outputs and gradients match reference {}: {}", ref, s.name),
              [&] { return compare_scenario(registry, name, options, setup, s); });
  }
}

}  // namespace attnlab::conformance
