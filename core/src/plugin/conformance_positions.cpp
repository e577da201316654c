// Conformance of positions inside attention (attention_positions.h), both sides:
//   positional plugins that declare hooks: their part inside attention uses exactly the declared
//     hooks, continues with an offset (incremental decoding), depends on positions only through
//     the distance key - query, has correct gradients, and repeats for one seed;
//   attention plugins that apply hooks: with the kit's own scheme (KitPositions, one of each
//     hook) incremental decoding equals full decoding, the positions change the output, the
//     gradients are correct, and outputs and gradients match the reference plugin; so do they
//     with each registered positional plugin whose hooks the plugin serves.
#include <cmath>
#include <limits>

#include "attnlab/autograd.h"
#include "attnlab/ops.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/plugin/kernel_term_math.h"
#include "attnlab/testing/gradcheck.h"
#include "plugin/conformance_support.h"

namespace attnlab::conformance {
namespace {

constexpr double kTol = 1e-10;
constexpr std::int64_t kHeads = 2, kDk = 4, kDv = 6, kT = 6;

Tensor host_table(const Shape& shape, const std::vector<double>& v, const Tensor& like) {
  return Tensor::from_vector<double>(shape, v).to(like.dtype()).to(like.device());
}

// A scheme with one of each hook, built from core ops for any head size: a position-dependent
// scaling of queries and keys, a score term (q . r) g(i, j) + c(i, j), and a value term
// (w * e(i, j)) C with C [Tk, d_v] from the key position. Absolute positions enter everywhere, so
// a plugin that uses a wrong offset anywhere disagrees with full decoding.
// With hooks.kernel_form (for attention plugins that apply terms only in that form) the score and
// value terms are instead every kind of kernel_terms.h: a distance bias with a slope per head,
// bucket scores q . R_r and bucket values C_r, clipped at kClip; score_terms and value_terms are
// then their expansion, which the reference plugin applies.
class KitPositions final : public AttentionPositions {
 public:
  static constexpr std::int64_t kClip = 2;
  explicit KitPositions(PositionHooks hooks) : hooks_(hooks) {}

  KernelScoreTerms kernel_score_terms(const Tensor& q, std::int64_t, std::int64_t) const override {
    if (!hooks_.kernel_form || !hooks_.score_terms) return {};
    const std::int64_t h = q.dim(1), d = q.dim(3), n = terms::bucket_count(kClip);
    std::vector<double> slopes(static_cast<std::size_t>(h)), r(static_cast<std::size_t>(n * d));
    for (std::int64_t k = 0; k < h; ++k) slopes[static_cast<std::size_t>(k)] = 0.3 * static_cast<double>(k + 1) / h;
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t k = 0; k < d; ++k) r[static_cast<std::size_t>(b * d + k)] = std::cos(1.3 * k + 0.7 * b);
    return {.slopes = host_table({h}, slopes, q), .bucket_scores = matmul(q, host_table({n, d}, r, q), false, true),
            .clip = kClip};
  }

  KernelValueTerms kernel_value_terms() const override {
    if (!hooks_.kernel_form || !hooks_.value_terms) return {};
    const std::int64_t n = terms::bucket_count(kClip);
    std::vector<double> c(static_cast<std::size_t>(n * value_width));
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t k = 0; k < value_width; ++k)
        c[static_cast<std::size_t>(b * value_width + k)] = std::sin(b - 0.4 * k);
    return {.bucket_values = host_table({n, value_width}, c, like), .clip = kClip};
  }

  Tensor rotate(const Tensor& x, std::int64_t offset) const override {
    if (!hooks_.rotate) return x;
    const std::int64_t t = x.dim(2), d = x.dim(3);
    std::vector<double> s(static_cast<std::size_t>(t * d));
    for (std::int64_t p = 0; p < t; ++p)
      for (std::int64_t c = 0; c < d; ++c)
        s[static_cast<std::size_t>(p * d + c)] = 1.0 + 0.5 * std::sin(0.7 * static_cast<double>(offset + p) + c);
    return mul(x, host_table({t, d}, s, x));
  }

  Tensor score_terms(const Tensor& q, std::int64_t q_offset, std::int64_t keys) const override {
    if (!hooks_.score_terms) return {};
    if (hooks_.kernel_form) return AttentionPositions::score_terms(q, q_offset, keys);
    const std::int64_t tq = q.dim(2), d = q.dim(3);
    std::vector<double> r(static_cast<std::size_t>(d)), g(static_cast<std::size_t>(tq * keys)), c(g.size());
    for (std::int64_t k = 0; k < d; ++k) r[static_cast<std::size_t>(k)] = std::cos(1.3 * static_cast<double>(k));
    for (std::int64_t i = 0; i < tq; ++i)
      for (std::int64_t j = 0; j < keys; ++j) {
        const double delta = static_cast<double>(j - (q_offset + i));
        g[static_cast<std::size_t>(i * keys + j)] = std::cos(0.9 * delta);
        c[static_cast<std::size_t>(i * keys + j)] = -0.3 * std::abs(delta);
      }
    Tensor qr = matmul(q, host_table({d, 1}, r, q));                                      // [B, h, Tq, 1]
    Tensor spread = matmul(qr, Tensor::full({1, keys}, 1.0, q.dtype(), q.device()));   // [B, h, Tq, Tk]
    return add(mul(spread, host_table({tq, keys}, g, q)), host_table({tq, keys}, c, q));
  }

  Tensor value_terms(const Tensor& w, std::int64_t q_offset) const override {
    if (!hooks_.value_terms) return {};
    if (hooks_.kernel_form) return AttentionPositions::value_terms(w, q_offset);
    const std::int64_t tq = w.dim(2), tk = w.dim(3);
    std::vector<double> e(static_cast<std::size_t>(tq * tk)), c(static_cast<std::size_t>(tk * value_width));
    for (std::int64_t i = 0; i < tq; ++i)
      for (std::int64_t j = 0; j < tk; ++j)
        e[static_cast<std::size_t>(i * tk + j)] = std::sin(0.4 * static_cast<double>(j - (q_offset + i)) + 0.2);
    for (std::int64_t j = 0; j < tk; ++j)
      for (std::int64_t k = 0; k < value_width; ++k) c[static_cast<std::size_t>(j * value_width + k)] = std::cos(j + 0.5 * k);
    return matmul(mul(w, host_table({tq, tk}, e, w)), host_table({tk, value_width}, c, w));
  }

  std::int64_t value_width = 0;  // d_v of the attention under test
  Tensor like;                   // a tensor of its dtype and device (for the kernel-form values)

 private:
  PositionHooks hooks_;
};

Tensor slice_axis(const Tensor& x, int axis, std::int64_t begin, std::int64_t end) {
  const std::int64_t t = x.dim(axis);
  std::vector<std::int64_t> sizes;
  if (begin > 0) sizes.push_back(begin);
  sizes.push_back(end - begin);
  if (end < t) sizes.push_back(t - end);
  return split(x, axis, sizes)[begin > 0 ? 1 : 0];
}

// Score terms as [B, h, Tq, Tk] whichever of the two allowed shapes the scheme returns.
Tensor as_four_axes(const Tensor& t) { return t.rank() == 3 ? t.reshape({1, t.dim(0), t.dim(1), t.dim(2)}) : t; }

// "" when m[..., i, j] == m[..., i + 1, j + 1] for all i, j (a function of j - i only).
std::string depends_on_distance_only(const Tensor& m, const std::string& what) {
  const auto v = m.to_vector<double>();
  const std::int64_t rows = m.dim(-2), cols = m.dim(-1), blocks = m.numel() / (rows * cols);
  for (std::int64_t b = 0; b < blocks; ++b)
    for (std::int64_t i = 0; i + 1 < rows; ++i)
      for (std::int64_t j = 0; j + 1 < cols; ++j) {
        const double a = v[static_cast<std::size_t>((b * rows + i) * cols + j)];
        const double c = v[static_cast<std::size_t>((b * rows + i + 1) * cols + j + 1)];
        if (std::abs(a - c) > kTol * (1 + std::abs(c)))
          return fmt::format("{} at query {} key {} is {} but {} one position later", what, i, j, a, c);
      }
  return {};
}

// [B, h, T, d] holding the same vector at every position (and in every batch row and head).
Tensor repeated(const Tensor& one, std::int64_t b, std::int64_t h, std::int64_t t) {
  const auto v = one.to_vector<double>();
  std::vector<double> out;
  for (std::int64_t n = 0; n < b * h * t; ++n) out.insert(out.end(), v.begin(), v.end());
  return Tensor::from_vector<double>({b, h, t, one.numel()}, out).to(one.device());
}

// Plugin `name` and options.reference with the in-layer part of positional plugin `scheme`:
// causal self-attention over a padded batch (outputs, gradients of the input and of the scheme's
// parameters) and step-by-step decoding with a cache (outputs).
std::string compare_with_scheme(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                                const AttentionSetup& setup, const std::string& scheme) {
  const Device dev = options.device;
  const DType dt = setup.dtype;
  constexpr std::int64_t kB = 2, kLen = 7, kD = 8;
  Generator init(61), drop(62);
  ConformanceOptions plain;
  plain.device = dev;
  BuildContext ctx = small_context(registry, PluginFamily::positional, scheme, plain, init, drop, dt);
  ctx.dims.d_k = setup.d_k;
  ctx.dims.d_v = setup.d_v;
  const std::shared_ptr<PositionalEncoding> encoding = registry.make_positional(scheme, ctx);
  const std::shared_ptr<AttentionPositions> inside = encoding->attention_positions(ctx);
  if (!inside) return {};
  std::vector<double> m(static_cast<std::size_t>(kB * kLen), 0.0);
  for (std::int64_t j = 5; j < kLen; ++j)  // batch row 1 has two padded keys
    m[static_cast<std::size_t>(kLen + j)] = -std::numeric_limits<double>::infinity();
  const Tensor mask = Tensor::from_vector<double>({kB, kLen}, m).to(dt).to(dev);
  struct Result {
    Tensor out, steps, dx;
    std::vector<Tensor> dparams;
  };
  auto run = [&](const std::string& plugin) {
    auto a = build_attention(registry, plugin, options, setup, 23);
    inside->zero_grad();
    Tensor x = random_input({kB, kLen, kD}, 63, dev).to(dt);
    x.set_requires_grad();
    Result r;
    Tensor out = a.module->forward(
        {.query = x, .key = x, .value = x, .key_padding_mask = mask, .causal = true, .positions = inside.get()});
    out.backward(random_input(out.shape(), 64, dev).to(dt));
    r.out = out.detach();
    r.dx = x.grad();
    for (const Tensor& p : inside->parameters()) r.dparams.push_back(p.grad().defined() ? p.grad().detach() : Tensor());
    NoGradGuard no_grad;
    r.steps = step_by_step(*a.module, x.detach(), inside.get());
    return r;
  };
  const Result got = run(name), want = run(options.reference);
  if (auto e = compare_close(got.out, want.out, setup.tol, "output"); !e.empty()) return e;
  if (auto e = compare_close(got.dx, want.dx, setup.tol, "gradient of the input"); !e.empty()) return e;
  for (std::size_t i = 0; i < got.dparams.size(); ++i) {
    if (got.dparams[i].defined() != want.dparams[i].defined())
      return fmt::format("parameter {} of {} has a gradient with one plugin only", i, scheme);
    if (got.dparams[i].defined())
      if (auto e = compare_close(got.dparams[i], want.dparams[i], setup.tol, "gradient of a parameter of " + scheme);
          !e.empty())
        return e;
  }
  return compare_close(got.steps, want.steps, setup.tol, "step-by-step output");
}

}  // namespace

void check_positional_hooks(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                            ConformanceReport& report) {
  const PositionHooks declared = registry.find(PluginFamily::positional, name).positions;
  struct Part {
    std::unique_ptr<Generator> init, dropout;
    std::shared_ptr<PositionalEncoding> encoding;
    std::shared_ptr<AttentionPositions> inside;
  };
  auto make = [&](std::uint64_t seed) {
    Part p{std::make_unique<Generator>(seed), std::make_unique<Generator>(seed + 1000), nullptr, nullptr};
    BuildContext ctx = small_context(registry, PluginFamily::positional, name, options, *p.init, *p.dropout);
    ctx.dims.n_heads = kHeads, ctx.dims.d_k = kDk, ctx.dims.d_v = kDv;
    p.encoding = registry.make_positional(name, ctx);
    p.inside = p.encoding->attention_positions(ctx);
    if (p.inside) p.inside->eval();
    return p;
  };
  const Device dev = options.device;
  const Tensor q = random_input({2, kHeads, kT, kDk}, 41, dev);
  const Tensor w = softmax(random_input({2, kHeads, kT, kT}, 42, dev));

  run_check(report, fmt::format("its part inside attention uses the declared hooks ({})", declared.describe()),
            [&]() -> std::string {
              Part p = make(5);
              if (!declared.any())
                return p.inside ? "it has a part inside attention but declares no hooks (PluginInfo::positions)" : "";
              if (!p.inside) return "it declares hooks but attention_positions() gives none";
              PositionHooks used;
              used.rotate = !compare(p.inside->rotate(q, 1), q, 0.0, "").empty();
              used.score_terms = p.inside->score_terms(q, 1, kT).defined();
              used.value_terms = p.inside->value_terms(w, 0).defined();
              if (const PositionHooks extra = used.missing_from(declared); extra.any())
                return fmt::format("it uses {} without declaring them", extra.describe());
              if (const PositionHooks unused = declared.missing_from(used); unused.any())
                return fmt::format("it declares {} but does not use them", unused.describe());
              return "";
            });
  run_check(report, "its terms in kernel form match the declaration and the tensor hooks", [&]() -> std::string {
    Part p = make(5);
    if (!p.inside) return {};
    const KernelScoreTerms ks = p.inside->kernel_score_terms(q, 1, kT);
    const KernelValueTerms kv = p.inside->kernel_value_terms();
    if (!declared.kernel_form)
      return ks.any() || kv.any() ? "it gives terms in kernel form without declaring kernel_form" : "";
    if (ks.any() != declared.score_terms || kv.any() != declared.value_terms)
      return fmt::format("it declares kernel form and {} but gives score terms {}, value terms {} in kernel form",
                         declared.describe(), ks.any() ? "yes" : "no", kv.any() ? "yes" : "no");
    check_kernel_terms("the kernel form", ks, kv, q, kv.any() ? kv.bucket_values.dim(-1) : 0);
    if (ks.any()) {
      const Tensor expanded = as_four_axes(expand_score_terms(ks, q, 1, kT));
      const Tensor dense = as_four_axes(p.inside->score_terms(q, 1, kT));
      if (auto m = compare(expanded, dense, kTol, "expanded kernel-form score terms against score_terms"); !m.empty())
        return m;
    }
    if (kv.any())
      return compare(expand_value_terms(kv, w, 0), p.inside->value_terms(w, 0), kTol,
                     "expanded kernel-form value terms against value_terms");
    return {};
  });
  if (!declared.any()) return;

  if (declared.rotate) {
    run_check(report, "rotation: an offset continues the sequence (incremental decoding)", [&] {
      Part p = make(5);
      return compare(slice_axis(p.inside->rotate(q, 0), 2, 2, kT), p.inside->rotate(slice_axis(q, 2, 2, kT), 2), kTol,
                     "positions 2..5 rotated with offset 2");
    });
    run_check(report, "rotation: query-key products depend only on the distance", [&] {
      Part p = make(5);
      Tensor rq = p.inside->rotate(repeated(random_input({kDk}, 43, dev), 1, 1, kT), 0);
      Tensor rk = p.inside->rotate(repeated(random_input({kDk}, 44, dev), 1, 1, kT), 0);
      return depends_on_distance_only(matmul(rq, rk, false, true), "rot(q) . rot(k)");
    });
  }
  if (declared.score_terms) {
    run_check(report, "score terms: an offset continues the sequence (incremental decoding)", [&] {
      Part p = make(5);
      Tensor full = as_four_axes(p.inside->score_terms(q, 0, kT));
      Tensor tail = as_four_axes(p.inside->score_terms(slice_axis(q, 2, 2, kT), 2, kT));
      return compare(slice_axis(full, 2, 2, kT), tail, kTol, "score terms of queries 2..5 at offset 2");
    });
    run_check(report, "score terms depend only on the distance", [&] {
      Part p = make(5);
      Tensor same = repeated(random_input({kDk}, 45, dev), 1, kHeads, kT);
      return depends_on_distance_only(as_four_axes(p.inside->score_terms(same, 0, kT)), "the score term");
    });
  }
  if (declared.value_terms) {
    run_check(report, "value terms: an offset continues the sequence (incremental decoding)", [&] {
      Part p = make(5);
      Tensor full = p.inside->value_terms(w, 0);
      Tensor tail = p.inside->value_terms(slice_axis(w, 2, 2, kT), 2);
      return compare(slice_axis(full, 2, 2, kT), tail, kTol, "value terms of queries 2..5 at offset 2");
    });
    run_check(report, "value terms depend only on the distance", [&]() -> std::string {
      Part p = make(5);
      // Every query puts all its weight on the key one position before it (query 0 on key 0).
      std::vector<double> one_back(static_cast<std::size_t>(kT * kT), 0.0);
      for (std::int64_t i = 0; i < kT; ++i) one_back[static_cast<std::size_t>(i * kT + std::max<std::int64_t>(i - 1, 0))] = 1;
      Tensor z = p.inside->value_terms(
          Tensor::from_vector<double>({1, 1, kT, kT}, one_back).to(dev), 0);  // [1, 1, T, d_v]
      return compare(slice_axis(z, 2, 1, kT - 1), slice_axis(z, 2, 2, kT), kTol,
                     "value terms of queries that all look one position back");
    });
  }
  run_check(report, "positions inside attention: gradients (finite differences)", [&]() -> std::string {
    if (!dev.is_cpu()) return {};
    Part p = make(5);
    auto r = testing::gradcheck(
        [&](const std::vector<Tensor>& in) {
          Tensor out = p.inside->rotate(in[0], 1);
          if (Tensor s = p.inside->score_terms(in[0], 1, kT); s.defined()) out = add(out, sum(as_four_axes(s)));
          if (Tensor z = p.inside->value_terms(in[1], 2); z.defined()) out = add(out, sum(z));
          return out;
        },
        {slice_axis(q, 2, 0, 3), slice_axis(w, 2, 0, 4)}, {}, p.inside->parameters());
    return r.ok ? std::string() : r.message;
  });
  run_check(report, "positions inside attention: same seed gives the same result", [&]() -> std::string {
    Part a = make(9), b = make(9);
    const auto pa = a.inside->named_parameters(), pb = b.inside->named_parameters();
    if (pa.size() != pb.size()) return "two builds with one seed have different parameter lists";
    for (std::size_t i = 0; i < pa.size(); ++i)
      if (auto m = compare(pa[i].second, pb[i].second, 0.0, "parameter " + pa[i].first); !m.empty()) return m;
    Tensor sa = a.inside->score_terms(q, 0, kT), sb = b.inside->score_terms(q, 0, kT);
    return sa.defined() ? compare(sa, sb, 0.0, "score terms") : "";
  });
}

void check_attention_positions(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                               const AttentionSetup& setup, ConformanceReport& report) {
  const AttentionDeviceSupport* support = registry.find(PluginFamily::attention, name).capabilities.on(options.device.kind);
  if (!support || !support->positions.any()) return;
  const PositionHooks hooks = support->positions;
  const Device dev = options.device;
  const DType dt = setup.dtype;
  constexpr std::int64_t kB = 2, kLen = 5, kD = 8;
  const Tensor x = random_input({kB, kLen, kD}, 51, dev).to(dt);
  KitPositions all(hooks);
  all.value_width = setup.d_v;
  all.like = x;
  const std::string label = fmt::format("positions ({})", hooks.describe());

  run_check(report, label + ": incremental self-attention equals full decoding", [&] {
    auto a = build_attention(registry, name, options, setup, 5);
    Tensor full = a.module->forward({.query = x, .key = x, .value = x, .causal = true, .positions = &all});
    return compare_close(full, step_by_step(*a.module, x, &all), setup.tol, "step-by-step output with positions");
  });

  const PositionHooks each[] = {{.rotate = true}, {.score_terms = true}, {.value_terms = true}};
  for (const PositionHooks& one : each) {
    if (one.missing_from(hooks).any()) continue;
    run_check(report, fmt::format("positions: the output changes with {}", one.describe()), [&]() -> std::string {
      auto a = build_attention(registry, name, options, setup, 5);
      KitPositions only({one.rotate, one.score_terms, one.value_terms, hooks.kernel_form});
      only.value_width = setup.d_v;
      only.like = x;
      Tensor with = a.module->forward({.query = x, .key = x, .value = x, .positions = &only});
      Tensor without = a.module->forward({.query = x, .key = x, .value = x});
      if (compare_close(with, without, setup.tol, "").empty())
        return "the output is the same with and without them: the plugin ignores this hook";
      return {};
    });
  }

  run_check(report, label + ": gradients (finite differences)", [&]() -> std::string {
    if (!dev.is_cpu() || dt != DType::f64) return {};
    auto a = build_attention(registry, name, options, setup, 5);
    std::vector<double> m(static_cast<std::size_t>(kB * kLen), 0.0);
    m[static_cast<std::size_t>(kLen + 4)] = -std::numeric_limits<double>::infinity();
    Tensor mask = Tensor::from_vector<double>({kB, kLen}, m).to(dev);
    auto r = testing::gradcheck(
        [&](const std::vector<Tensor>& in) {
          return a.module->forward({.query = in[0], .key = in[0], .value = in[0], .key_padding_mask = mask,
                                    .positions = &all});
        },
        {x}, {}, a.module->parameters());
    return r.ok ? std::string() : r.message;
  });

  if (options.reference.empty()) return;
  run_check(report, fmt::format("{}: outputs and gradients match reference {} (causal self-attention)", label,
                                options.reference),
            [&]() -> std::string {
              auto run = [&](const std::string& plugin) {
                auto a = build_attention(registry, plugin, options, setup, 21);
                Tensor in = random_input({kB, kLen, kD}, 52, dev).to(dt);
                in.set_requires_grad();
                Tensor out = a.module->forward({.query = in, .key = in, .value = in, .causal = true, .positions = &all});
                out.backward(random_input(out.shape(), 53, dev).to(dt));
                return std::pair{out.detach(), in.grad()};
              };
              const auto got = run(name), want = run(options.reference);
              if (auto m = compare_close(got.first, want.first, setup.tol, "output"); !m.empty()) return m;
              return compare_close(got.second, want.second, setup.tol, "gradient of the input");
            });

  // Every registered positional scheme the plugin serves, against the reference, with an even d_k
  // where the plugin serves any head size (rotations turn pairs of dimensions).
  AttentionSetup even = setup;
  if (even.d_k % 2 != 0 && registry.find(PluginFamily::attention, name).capabilities.on(dev.kind)->head_dims.empty())
    ++even.d_k;
  for (const PluginInfo& scheme : registry.list(PluginFamily::positional)) {
    if (!scheme.positions.any()) continue;
    const AttentionNeeds needs{.padding_mask = false, .causal = false, .incremental = false,
                               .positions = scheme.positions, .positional = scheme.name};
    if (check_attention_support(registry.find(PluginFamily::attention, name), dev, dt, even.d_k, even.d_v, needs))
      continue;
    run_check(report, fmt::format("positional plugin {}: outputs and gradients match reference {}, step by step too",
                                  scheme.name, options.reference),
              [&] { return compare_with_scheme(registry, name, options, even, scheme.name); });
  }
}

}  // namespace attnlab::conformance
