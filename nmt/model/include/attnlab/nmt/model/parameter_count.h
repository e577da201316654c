#pragma once
// Parameter counts of a Transformer configuration without building the whole model: one
// attention, one feed-forward, one positional and one norm module are built at the
// configuration's dimensions through the registry (so any plugin counts correctly) and composed:
//   V d_model (shared embedding) + N_enc (attn + pos + ffn + 2 norm) + N_dec (2 attn + pos + ffn
//   + 3 norm) + 2 positional (+ one norm per stack with pre-norm) + the learned tensors of score
//   expressions, with pos the positions inside one self-attention layer.
// Equal to Transformer::parameter_count() of the built model.
#include <cstdint>

#include "attnlab/nmt/model/model_config.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::nmt {

struct ParameterCount {
  std::int64_t embedding = 0;   // V d_model
  std::int64_t attention = 0;   // one attention module
  std::int64_t ffn = 0;         // one feed-forward module
  std::int64_t norm = 0;        // one norm module
  std::int64_t positional = 0;  // one positional module (there are two: source and target)
  // The positional scheme's part in one self-attention layer (one per encoder and decoder layer).
  std::int64_t attention_positions = 0;
  // The learned tensors of score expressions, over every attention layer that reads them.
  std::int64_t expressions = 0;
  std::int64_t total = 0;
};

// Throws the plugin's error when a module cannot be built at these dimensions.
ParameterCount count_parameters(const TransformerConfig& config, const Registry& registry);

}  // namespace attnlab::nmt
