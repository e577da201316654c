#pragma once
// The positional-encoding family: adds position information to the (scaled) embeddings, and/or
// acts inside every self-attention layer (attnlab/plugin/attention_positions.h).
#include <cstdint>
#include <memory>

#include "attnlab/module.h"
#include "attnlab/plugin/attention_positions.h"

namespace attnlab {

struct BuildContext;

class PositionalEncoding : public Module {
 public:
  // x [B, T, d_model] at positions offset .. offset + T - 1 (offset > 0 in incremental decoding).
  // Returns x with the encoding added, same shape. Throws an Error naming the position and the
  // maximum when an encoding with a table (learned) is asked past its maximum length.
  // A scheme that acts only inside attention returns x.
  virtual Tensor forward(const Tensor& x, std::int64_t offset = 0) = 0;
  // The scheme's part inside one self-attention layer, built once per layer with that layer's
  // context (its init generator draws any parameters, after the layer's attention); null when
  // the scheme does not act inside attention. Must use only the hooks the plugin declares.
  virtual std::shared_ptr<AttentionPositions> attention_positions(const BuildContext& ctx) const;
};

}  // namespace attnlab
