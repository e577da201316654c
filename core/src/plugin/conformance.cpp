#include <cmath>

#include "attnlab/init.h"
#include "attnlab/ops/shape_ops.h"
#include "plugin/conformance_support.h"

namespace attnlab {

bool ConformanceReport::passed() const {
  for (const auto& c : checks)
    if (!c.passed) return false;
  return !checks.empty();
}

std::string ConformanceReport::summary() const {
  std::string out;
  for (const auto& c : checks)
    out += fmt::format("  [{}] {} {}{}\n", c.passed ? "pass" : "FAIL", family_name(family), plugin,
                       c.passed ? fmt::format(": {}", c.name) : fmt::format(": {}: {}", c.name, c.message));
  return out;
}

ConformanceReport run_conformance(const Registry& registry, PluginFamily family,
                                  const std::string& name, const ConformanceOptions& options) {
  ConformanceReport report;
  report.family = family;
  report.plugin = name;
  registry.find(family, name);  // unknown names throw with the list of plugins
  switch (family) {
    case PluginFamily::attention: conformance::check_attention(registry, name, options, report); break;
    case PluginFamily::positional: conformance::check_positional(registry, name, options, report); break;
    case PluginFamily::ffn: conformance::check_ffn(registry, name, options, report); break;
    case PluginFamily::dropout: conformance::check_dropout(registry, name, options, report); break;
    case PluginFamily::norm: conformance::check_norm(registry, name, options, report); break;
  }
  return report;
}

namespace conformance {

BuildContext small_context(const Registry& registry, PluginFamily family, const std::string& name,
                           const ConformanceOptions& options, Generator& init, Generator& dropout,
                           DType dtype) {
  BuildContext ctx;
  ctx.dims = {.d_model = 8, .n_heads = 2, .d_k = 3, .d_v = 5, .d_ff = 12, .max_length = 64};
  ctx.dropout = {.residual = 0.0, .embedding = 0.0, .attention = 0.0, .ffn = 0.0};
  ctx.device = options.device;
  ctx.dtype = dtype;
  ctx.init = &init;
  ctx.dropout_rng = &dropout;
  ctx.registry = &registry;
  ctx.options = Options::with_defaults(registry.find(family, name).options, options.options);
  return ctx;
}

void run_check(ConformanceReport& report, const std::string& name,
               const std::function<std::string()>& body) {
  ConformanceCheck check{name, false, {}};
  try {
    check.message = body();
    check.passed = check.message.empty();
  } catch (const std::exception& e) {
    check.message = fmt::format("threw: {}", e.what());
  }
  report.checks.push_back(std::move(check));
}

namespace {

// The worst element of a against b by `excess` (how far |a - b| is past its allowance, > 0: a
// failure), or an empty string when none is past it; `allowance` words the tolerance.
template <typename Excess>
std::string worst_element(const Tensor& a, const Tensor& b, const std::string& what, Excess excess,
                          const std::string& allowance) {
  if (a.shape() != b.shape())
    return fmt::format("{}: shapes differ, {} vs {}", what, a.shape().str(), b.shape().str());
  const auto va = a.to_vector<double>();
  const auto vb = b.to_vector<double>();
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    const double e = excess(std::abs(va[i] - vb[i]), vb[i]);
    if (std::isnan(e)) {  // a NaN on either side fails, whatever follows
      worst = e, at = i;
      break;
    }
    if (e > worst) worst = e, at = i;
  }
  if (worst <= 0) return {};
  return fmt::format("{}: element {} differs by {} ({} vs {}{})", what, at, std::abs(va[at] - vb[at]), va[at], vb[at],
                     allowance);
}

}  // namespace

std::string compare(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  return worst_element(a, b, what, [tol](double diff, double) { return diff - tol; }, "");
}

std::string compare_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  return worst_element(
      a, b, what, [tol](double diff, double ref) { return diff - tol * (1.0 + std::abs(ref)); },
      fmt::format("; tolerance {} relative to 1 + |value|", tol));
}

Tensor random_input(const Shape& shape, std::uint64_t seed, Device device) {
  Generator g(seed);
  return uniform(shape, -1.0, 1.0, g, DType::f64, device);
}

Tensor slice_time(const Tensor& x, std::int64_t begin, std::int64_t end) {
  const std::int64_t t = x.dim(1);
  std::vector<std::int64_t> sizes;
  if (begin > 0) sizes.push_back(begin);
  sizes.push_back(end - begin);
  if (end < t) sizes.push_back(t - end);
  return split(x, 1, sizes)[begin > 0 ? 1 : 0];
}

Tensor step_by_step(Attention& attention, const Tensor& x, const AttentionPositions* positions) {
  KVCache cache;
  std::vector<Tensor> steps;
  for (std::int64_t t = 0; t < x.dim(1); ++t) {
    const Tensor s = slice_time(x, t, t + 1);
    steps.push_back(attention.forward(
        {.query = s, .key = s, .value = s, .causal = true, .cache = &cache, .positions = positions}));
  }
  return concat(steps, 1);
}

}  // namespace conformance
}  // namespace attnlab
