#pragma once
// The conformance kit: the checks every plugin of a family must pass, run against any registered
// plugin, in-tree or out-of-tree (`attnlab plugins --check FILE` runs it on a library).
//
// attention: output shapes (self and cross, h * d_v != d_model), finite-difference gradients of
//   inputs and parameters (on the CPU in f64), zero weight on padding keys, causal masking,
//   incremental decoding equal to full decoding (self-attention with a growing cache,
//   cross-attention with a static one, and after a beam reorder), same seed same parameters and
//   output (in training mode with attention dropout when the plugin supports it). A plugin whose
//   capabilities exclude the device or dtype is reported not applicable.
// positional: shape, offset consistency (incremental decoding), same encoding for every batch
//   row, gradients, same seed same result.
// ffn: shape, position-wise (no mixing across positions), gradients, same seed same result.
// dropout: identity in evaluation mode, same seed same mask, expectation preserved.
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
  // Set when the plugin's capabilities exclude the requested device or dtype: no check ran, and
  // passed() is false. Says what the plugin supports.
  std::string not_applicable;
  bool passed() const;
  std::string summary() const;  // one line per check
};

struct ConformanceOptions {
  Device device = Device::cpu();
  // Plugin options (e.g. an attention plugin's own switches); defaults are filled in.
  std::map<std::string, OptionValue> options;
  // Attention: the dtype of inputs and parameters, the per-head sizes, and the largest difference
  // allowed between two computations that must agree (0: by dtype, f64 1e-10, f32 1e-5, bf16
  // 3e-2). A plugin that computes in bf16 on f32 tensors needs a bf16 tolerance.
  DType dtype = DType::f64;
  std::int64_t d_k = 3;
  std::int64_t d_v = 5;
  double tolerance = 0.0;
};

// Runs the family's checks on plugin `name`. Exceptions inside a check fail that check.
ConformanceReport run_conformance(const Registry& registry, PluginFamily family,
                                  const std::string& name, const ConformanceOptions& options = {});

}  // namespace attnlab
