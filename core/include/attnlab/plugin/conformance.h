#pragma once
// The conformance kit: the checks every plugin of a family must pass, run against any registered
// plugin, in-tree or out-of-tree (`attnlab plugins --check FILE` runs it on a library).
//
// attention: output shapes (self and cross, h * d_v != d_model), finite-difference gradients of
//   inputs and parameters, zero weight on padding keys, causal masking, incremental decoding
//   equal to full decoding (self-attention with a growing cache, cross-attention with a static
//   one, and after a beam reorder), same seed same parameters and output (in training mode with
//   attention dropout when the plugin serves it); for the position hooks the plugin applies on the
//   device, with the kit's own scheme: incremental equal to full decoding, each hook changing the
//   output, gradients, and the reference comparison; with a reference, also the comparison with
//   each registered positional plugin the plugin serves (outputs, gradients, step by step).
// positional: shape, offset consistency (incremental decoding), same encoding for every batch
//   row, gradients, same seed same result; for a part inside attention: the declared hooks and
//   no others, offsets continuing the sequence, dependence on the key - query distance only,
//   gradients and same seed same result, and terms in kernel form as declared and equal to the
//   tensor hooks.
// ffn: shape, position-wise (no mixing across positions), gradients, same seed same result.
// norm: shape, each position on its own, invariance to the input's scale, gradients, same seed
//   same result (with its parameters moved off their initial values), and the core's layer_norm or
//   rms_norm with the parameters Norm::fusable offers equal to its forward.
// dropout: at each site (embedding, residual, attention, ffn) with an input of its shape, and at
//   training steps 0 and 1000000: identity in evaluation mode and at rate 0, same seed same mask,
//   the fraction dropped equal to rate(), expectation preserved.
#include <optional>
#include <string>
#include <vector>

#include "attnlab/plugin/registry.h"

namespace attnlab {

struct ConformanceCheck {
  std::string name;
  bool passed = false;
  std::string message;  // why it failed
};

struct ConformanceReport {
  PluginFamily family = PluginFamily::attention;
  std::string plugin;
  std::vector<ConformanceCheck> checks;
  bool passed() const;
  std::string summary() const;  // one line per check
};

struct ConformanceOptions {
  Device device = Device::cpu();
  // Plugin options (e.g. an attention plugin's own switches); defaults are filled in.
  std::map<std::string, OptionValue> options;
  // Element type of the checks. Unset: f64 when the plugin serves it on the device (every
  // comparison then holds to 1e-10), else f32 (1e-4), else the first dtype it declares (bf16:
  // 5e-2). Finite-difference gradients are checked in f64 on the CPU only.
  std::optional<DType> dtype;
  // Attention: per-head sizes. 0 takes the kit's d_k = 3 and d_v = 5 when the plugin serves any
  // head size on the device, else the two smallest it declares (one when it declares one).
  std::int64_t d_k = 0;
  std::int64_t d_v = 0;
  // Attention: a plugin to compare with (e.g. "scaled_dot"), built with the same seed and options.
  // Empty: no comparison.
  std::string reference;
  // Attention: the largest difference allowed between two computations that must agree (relative
  // to 1 + |value|); 0 takes the dtype's (above), or the tolerance of the plugin's compute_dtype
  // when that is coarser (cudnn computes f32 tensors in bf16: 5e-2).
  double tolerance = 0.0;
};

// Runs the family's checks on plugin `name`. Exceptions inside a check fail that check.
ConformanceReport run_conformance(const Registry& registry, PluginFamily family,
                                  const std::string& name, const ConformanceOptions& options = {});

}  // namespace attnlab
