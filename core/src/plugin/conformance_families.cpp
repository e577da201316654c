// Conformance checks of the positional, ffn and dropout families.
#include <memory>

#include "attnlab/ops.h"
#include "attnlab/testing/gradcheck.h"
#include "plugin/conformance_support.h"

namespace attnlab::conformance {
namespace {

constexpr double kTol = 1e-10;

template <typename M>
struct Instance {
  std::unique_ptr<Generator> init, dropout;
  std::shared_ptr<M> module;
};

template <typename M>
Instance<M> build(const Registry& registry, PluginFamily family, const std::string& name,
                  const ConformanceOptions& options, std::uint64_t seed,
                  std::map<std::string, OptionValue> extra = {}) {
  Instance<M> in{std::make_unique<Generator>(seed), std::make_unique<Generator>(seed + 1000), nullptr};
  ConformanceOptions opts = options;
  for (auto& [k, v] : extra) opts.options[k] = v;
  BuildContext ctx = small_context(registry, family, name, opts, *in.init, *in.dropout);
  ctx.seed = seed;
  if constexpr (std::is_same_v<M, PositionalEncoding>) ctx.dims.d_k = 4;  // even: rotary schemes rotate pairs
  if constexpr (std::is_same_v<M, PositionalEncoding>) in.module = registry.make_positional(name, ctx);
  if constexpr (std::is_same_v<M, FeedForward>) in.module = registry.make_ffn(name, ctx);
  if constexpr (std::is_same_v<M, Dropout>) in.module = registry.make_dropout(name, ctx);
  in.module->eval();
  return in;
}

template <typename M>
std::string same_parameters(const M& a, const M& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  if (pa.size() != pb.size()) return "two builds with one seed have different parameter lists";
  for (std::size_t i = 0; i < pa.size(); ++i) {
    auto m = compare(pa[i].second, pb[i].second, 0.0, "parameter " + pa[i].first);
    if (!m.empty()) return m;
  }
  return {};
}

}  // namespace

void check_positional(const Registry& registry, const std::string& name,
                      const ConformanceOptions& options, ConformanceReport& report) {
  const Tensor x = random_input({2, 6, 8}, 21, options.device);
  auto make = [&](std::uint64_t seed) {
    return build<PositionalEncoding>(registry, PluginFamily::positional, name, options, seed);
  };

  run_check(report, "output shape", [&] {
    auto p = make(5);
    Tensor y = p.module->forward(x, 0);
    return y.shape() == x.shape() ? std::string() : fmt::format("gave {} for {}", y.shape().str(), x.shape().str());
  });

  run_check(report, "an offset continues the sequence (incremental decoding)", [&] {
    auto p = make(5);
    Tensor full = p.module->forward(x, 0);
    Tensor tail = p.module->forward(slice_time(x, 2, 6), 2);
    return compare(slice_time(full, 2, 6), tail, kTol, "positions 2..5 encoded with offset 2");
  });

  run_check(report, "every batch row gets the same encoding", [&] {
    auto p = make(5);
    Tensor zeros = Tensor::zeros({2, 6, 8}, DType::f64, options.device);
    auto rows = split(p.module->forward(zeros, 0), 0, {1, 1});
    return compare(rows[0], rows[1], kTol, "encoding of batch row 1 against row 0");
  });

  run_check(report, "gradients of input and parameters (finite differences)", [&]() -> std::string {
    if (!options.device.is_cpu()) return {};
    auto p = make(5);
    auto r = testing::gradcheck([&](const std::vector<Tensor>& in) { return p.module->forward(in[0], 1); },
                                {slice_time(x, 0, 3)}, {}, p.module->parameters());
    return r.ok ? std::string() : r.message;
  });

  run_check(report, "same seed gives the same result", [&] {
    auto a = make(9), b = make(9);
    auto m = same_parameters(*a.module, *b.module);
    return m.empty() ? compare(a.module->forward(x, 0), b.module->forward(x, 0), 0.0, "output") : m;
  });
  check_positional_hooks(registry, name, options, report);
}

void check_ffn(const Registry& registry, const std::string& name, const ConformanceOptions& options,
               ConformanceReport& report) {
  const Tensor x = random_input({2, 3, 8}, 31, options.device);
  auto make = [&](std::uint64_t seed) {
    return build<FeedForward>(registry, PluginFamily::ffn, name, options, seed);
  };

  run_check(report, "output shape", [&] {
    auto f = make(5);
    Tensor y = f.module->forward(x);
    return y.shape() == x.shape() ? std::string() : fmt::format("gave {} for {}", y.shape().str(), x.shape().str());
  });

  run_check(report, "position-wise: no mixing across positions", [&] {
    auto f = make(5);
    Tensor before = f.module->forward(x);
    auto v = x.to_vector<double>();
    for (std::size_t k = 8; k < 16; ++k) v[k] += 0.5;  // batch 0, position 1
    Tensor after = f.module->forward(Tensor::from_vector<double>(x.shape(), v).to(options.device));
    auto b0 = split(before, 1, {1, 1, 1}), a0 = split(after, 1, {1, 1, 1});
    auto m = compare(b0[0], a0[0], kTol, "position 0 after changing position 1");
    return m.empty() ? compare(b0[2], a0[2], kTol, "position 2 after changing position 1") : m;
  });

  run_check(report, "gradients of input and parameters (finite differences)", [&]() -> std::string {
    if (!options.device.is_cpu()) return {};
    auto f = make(5);
    auto r = testing::gradcheck([&](const std::vector<Tensor>& in) { return f.module->forward(in[0]); },
                                {slice_time(x, 0, 2)}, {}, f.module->parameters());
    return r.ok ? std::string() : r.message;
  });

  run_check(report, "same seed gives the same result", [&] {
    auto a = make(9), b = make(9);
    auto m = same_parameters(*a.module, *b.module);
    return m.empty() ? compare(a.module->forward(x), b.module->forward(x), 0.0, "output") : m;
  });
}

void check_dropout(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                   ConformanceReport& report) {
  // Each site with an input of the shape its axes mean there (many heads and tokens, so that
  // plugins that drop whole heads or tokens are measured over enough decisions).
  struct Site {
    DropoutSite site;
    Shape shape;
  };
  const Site sites[] = {{DropoutSite::embedding, {64, 32, 8}},
                        {DropoutSite::residual, {64, 32, 8}},
                        {DropoutSite::attention, {64, 8, 4, 4}},
                        {DropoutSite::ffn, {64, 32, 8}}};
  // The training step the kit's model is at: the start, and late in training (for schedules).
  const std::int64_t steps[] = {0, 1000000};
  for (const Site& site : sites) {
    const Tensor x = Tensor::full(site.shape, 1.0, DType::f64, options.device);
    std::int64_t step = 0;
    auto make = [&](std::uint64_t seed, double rate) {
      Instance<Dropout> in{std::make_unique<Generator>(seed), std::make_unique<Generator>(seed + 1000), nullptr};
      ConformanceOptions opts = options;
      opts.options["rate"] = rate;
      BuildContext ctx = small_context(registry, PluginFamily::dropout, name, opts, *in.init, *in.dropout);
      ctx.dropout_site = site.site;
      ctx.training_step = &step;
      in.module = registry.make_dropout(name, ctx);
      in.module->eval();
      return in;
    };
    const std::string at = fmt::format(" (site {}, {})", dropout_site_name(site.site), site.shape.str());

    run_check(report, "identity in evaluation mode" + at, [&] {
      auto d = make(5, 0.5);
      return compare(d.module->forward(x), x, 0.0, "evaluation-mode output");
    });

    run_check(report, "rate 0 is the identity in training" + at, [&] {
      auto d = make(5, 0.0);
      d.module->train();
      return compare(d.module->forward(x), x, 0.0, "training output at rate 0");
    });

    run_check(report, "same seed gives the same mask" + at, [&] {
      auto a = make(7, 0.3), b = make(7, 0.3);
      a.module->train();
      b.module->train();
      return compare(a.module->forward(x), b.module->forward(x), 0.0, "training output");
    });

    run_check(report, "drops at its rate() and preserves the expectation, at steps 0 and 1000000" + at,
              [&]() -> std::string {
                for (const std::int64_t s : steps) {
                  step = s;
                  auto d = make(7, 0.3);
                  d.module->train();
                  const double rate = d.module->rate();
                  if (rate < 0.0 || rate >= 1.0) return fmt::format("rate() is {} at step {}", rate, s);
                  const auto v = d.module->forward(x).to_vector<double>();
                  double total = 0.0, zeros = 0.0;
                  for (double e : v) total += e, zeros += e == 0.0;
                  const double n = static_cast<double>(v.size());
                  if (std::abs(zeros / n - rate) > 0.06)
                    return fmt::format("at step {} it dropped {:.3f} of the elements, but rate() is {}", s, zeros / n,
                                       rate);
                  if (std::abs(total / n - 1.0) > 0.05)
                    return fmt::format("at step {} the mean of dropped ones is {}, expected about 1", s, total / n);
                }
                return std::string();
              });
  }
}

}  // namespace attnlab::conformance
