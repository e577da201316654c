#pragma once
// Inverted dropout: y = x * keep / (1 - p), keep = [u >= p] with u the Philox uniform of
// (seed, offset, element index). The mask depends only on (seed, offset, shape), so it is the
// same for any thread count and on any device; the backward regenerates it instead of storing it.
#include <cstdint>

#include "attnlab/random.h"
#include "attnlab/tensor.h"

namespace attnlab {

// p in [0, 1); p == 0 returns x itself.
Tensor dropout(const Tensor& x, double p, std::uint64_t seed, std::uint64_t offset);
// Draws (seed, offset) from `generator`, advancing it by the tensor's size.
Tensor dropout(const Tensor& x, double p, Generator& generator);

}  // namespace attnlab
