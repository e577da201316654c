#pragma once
// The positional-encoding family: adds position information to the (scaled) embeddings.
#include <cstdint>

#include "attnlab/module.h"

namespace attnlab {

class PositionalEncoding : public Module {
 public:
  // x [B, T, d_model] at positions offset .. offset + T - 1 (offset > 0 in incremental decoding).
  // Returns x with the encoding added, same shape. Throws an Error naming the position and the
  // maximum when an encoding with a table (learned) is asked past its maximum length.
  virtual Tensor forward(const Tensor& x, std::int64_t offset = 0) = 0;
};

}  // namespace attnlab
