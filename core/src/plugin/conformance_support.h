#pragma once
// Shared pieces of the conformance checks (conformance_*.cpp).
#include <functional>
#include <memory>
#include <string>

#include "attnlab/expr/score_expr.h"
#include "attnlab/plugin/conformance.h"

namespace attnlab::conformance {

// Small dimensions that still exercise the interesting cases: h * d_v != d_model, d_k != d_v.
BuildContext small_context(const Registry& registry, PluginFamily family, const std::string& name,
                           const ConformanceOptions& options, Generator& init, Generator& dropout,
                           DType dtype = DType::f64);

// Runs `body`; an exception or a false return fails the check with its message.
void run_check(ConformanceReport& report, const std::string& name,
               const std::function<std::string()>& body);

// Empty when a and b agree to within tol (max abs difference); else a message naming what.
std::string compare(const Tensor& a, const Tensor& b, double tol, const std::string& what);

// Values uniform in [-1, 1) from seed, f64 on device.
Tensor random_input(const Shape& shape, std::uint64_t seed, Device device);

// Slices [:, begin:end, ...] of a [B, T, ...] tensor.
Tensor slice_time(const Tensor& x, std::int64_t begin, std::int64_t end);

// Causal self-attention of x [B, T, d] one step at a time with a growing KV cache (and the given
// positions inside attention): the steps' outputs concatenated, [B, T, d_model].
Tensor step_by_step(Attention& attention, const Tensor& x, const AttentionPositions* positions = nullptr);

// The attention checks' element type, head sizes and tolerance for a plugin on the kit's device
// (ConformanceOptions::dtype, d_k, d_v and the plugin's declared capabilities).
struct AttentionSetup {
  DType dtype = DType::f64;
  std::int64_t d_k = 3, d_v = 5;
  double tol = 1e-10;  // for results that must agree up to rounding (relative to 1 + |value|)
};
AttentionSetup attention_setup(const Registry& registry, const std::string& name, const ConformanceOptions& options);

// One attention module of the small model, in evaluation mode, with its own generators.
struct AttentionInstance {
  std::unique_ptr<Generator> init, dropout;
  std::shared_ptr<Attention> module;
};
// With `expressions`, the module applies them (BuildContext::score_expr).
AttentionInstance build_attention(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                                  const AttentionSetup& setup, std::uint64_t seed, double attention_dropout = 0.0,
                                  std::shared_ptr<const expr::ScoreExpr> expressions = nullptr);

// Empty when |a - b| <= tol (1 + |b|) everywhere; else a message naming what and the worst element.
std::string compare_close(const Tensor& a, const Tensor& b, double tol, const std::string& what);

// The comparison with options.reference (conformance_reference.cpp).
void check_attention_reference(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                               const AttentionSetup& setup, ConformanceReport& report);

// Score expressions (conformance_expressions.cpp): for a plugin that declares them on the device,
// the variants researchers write (a causal mask_mod, ALiBi, a learned T5 bias, a window with a sink,
// soft-capping, a learned per-head temperature), each against finite differences, incremental
// decoding, a rerun and the reference.
void check_attention_expressions(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                                 const AttentionSetup& setup, ConformanceReport& report);

// Positions inside attention (conformance_positions.cpp): an attention plugin's hooks with the
// kit's own scheme, and a positional plugin's part inside attention.
void check_attention_positions(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                               const AttentionSetup& setup, ConformanceReport& report);
void check_positional_hooks(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                            ConformanceReport& report);

void check_attention(const Registry& registry, const std::string& name,
                     const ConformanceOptions& options, ConformanceReport& report);
void check_positional(const Registry& registry, const std::string& name,
                      const ConformanceOptions& options, ConformanceReport& report);
void check_ffn(const Registry& registry, const std::string& name, const ConformanceOptions& options,
               ConformanceReport& report);
void check_dropout(const Registry& registry, const std::string& name,
                   const ConformanceOptions& options, ConformanceReport& report);
void check_norm(const Registry& registry, const std::string& name, const ConformanceOptions& options,
                ConformanceReport& report);

}  // namespace attnlab::conformance
