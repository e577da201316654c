// Conformance checks of the norm family: shape, each position normalized on its own, invariance
// to the scale of the input (what makes it a normalization), gradients, same seed same result,
// and, for a norm that offers fused kernels its parameters (Norm::fusable), that the core's op
// with those parameters computes what the plugin's forward does.
#include <memory>

#include "attnlab/autograd.h"
#include "attnlab/ops.h"
#include "attnlab/testing/gradcheck.h"
#include "plugin/conformance_support.h"

namespace attnlab::conformance {
namespace {

constexpr double kTol = 1e-10;

struct NormInstance {
  std::unique_ptr<Generator> init, dropout;
  std::shared_ptr<Norm> module;
};

NormInstance build_norm(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                        std::uint64_t seed) {
  NormInstance in{std::make_unique<Generator>(seed), std::make_unique<Generator>(seed + 1000), nullptr};
  BuildContext ctx = small_context(registry, PluginFamily::norm, name, options, *in.init, *in.dropout);
  ctx.seed = seed;
  ctx.norm_eps = 1e-9;  // small beside the inputs' variance: the scale check compares to 1e-5
  in.module = registry.make_norm(name, ctx);
  in.module->eval();
  return in;
}

// Replaces every parameter's values by draws from `seed` (around 1 for gains, so that a check
// does not pass merely because a gain is 1 or a bias 0). Parameters keep their identity.
void perturb_parameters(Module& module, std::uint64_t seed) {
  NoGradGuard no_grad;
  for (const auto& [name, p] : module.named_parameters()) {
    const Tensor values = random_input(p.shape(), seed++, Device::cpu()).to(p.dtype());
    const Tensor shifted = add(values, Tensor::full(p.shape(), 1.5, p.dtype())).to(p.device());
    p.impl()->storage = shifted.impl()->storage;
    p.impl()->offset_bytes = shifted.impl()->offset_bytes;
  }
}

}  // namespace

void check_norm(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                ConformanceReport& report) {
  const Tensor x = random_input({2, 3, 8}, 41, options.device);
  auto make = [&](std::uint64_t seed) {
    NormInstance n = build_norm(registry, name, options, seed);
    perturb_parameters(*n.module, seed + 7);
    return n;
  };

  run_check(report, "output shape", [&] {
    auto n = make(5);
    Tensor y = n.module->forward(x);
    return y.shape() == x.shape() ? std::string() : fmt::format("gave {} for {}", y.shape().str(), x.shape().str());
  });

  run_check(report, "each position normalized on its own", [&] {
    auto n = make(5);
    Tensor before = n.module->forward(x);
    auto v = x.to_vector<double>();
    for (std::size_t k = 8; k < 16; ++k) v[k] = 3.0 * v[k] + 0.25;  // batch 0, position 1
    Tensor after = n.module->forward(Tensor::from_vector<double>(x.shape(), v).to(options.device));
    auto b = split(before, 1, {1, 1, 1}), a = split(after, 1, {1, 1, 1});
    auto m = compare(b[0], a[0], kTol, "position 0 after changing position 1");
    return m.empty() ? compare(b[2], a[2], kTol, "position 2 after changing position 1") : m;
  });

  run_check(report, "invariant to the input's scale", [&] {
    // Up to the norm's epsilon, which the kit sets far below its inputs' variance.
    auto n = make(5);
    Tensor scaled = scale(x, 4.0);
    return compare(n.module->forward(scaled), n.module->forward(x), 1e-5, "norm(4 x) against norm(x)");
  });

  run_check(report, "gradients of input and parameters (finite differences)", [&]() -> std::string {
    if (!options.device.is_cpu()) return {};
    auto n = make(5);
    auto r = testing::gradcheck([&](const std::vector<Tensor>& in) { return n.module->forward(in[0]); },
                                {slice_time(x, 0, 2)}, {}, n.module->parameters());
    return r.ok ? std::string() : r.message;
  });

  run_check(report, "same seed gives the same result", [&] {
    auto a = make(9), b = make(9);
    return compare(a.module->forward(x), b.module->forward(x), 0.0, "output");
  });

  run_check(report, "fused parameters compute what forward does", [&]() -> std::string {
    auto n = make(5);
    const auto fused = n.module->fusable();
    if (!fused) return {};
    const Tensor y = fused->centered ? layer_norm(x, fused->gamma, fused->beta, fused->eps)
                                     : rms_norm(x, fused->gamma, fused->beta, fused->eps);
    return compare(y, n.module->forward(x), 0.0, fused->centered ? "layer_norm with the fusable parameters"
                                                                 : "rms_norm with the fusable parameters");
  });
}

}  // namespace attnlab::conformance
