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
// The same with the seed given by value or read from a slot when the kernels run (forward and
// backward); the slot must live on x's device.
Tensor dropout(const Tensor& x, double p, philox::SeedRef seed, std::uint64_t offset);
// Draws (seed, offset) from `generator`, advancing it by the tensor's size. With a seed slot bound
// on x's device, the kernels read the seed from the slot (Generator::bind_seed_slot).
Tensor dropout(const Tensor& x, double p, Generator& generator);

}  // namespace attnlab
