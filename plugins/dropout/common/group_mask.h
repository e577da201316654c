#pragma once
// Structured dropout for the dropout plugins: one keep decision per group of elements (a head, a
// token) instead of per element, drawn from the core's counter-based stream so that the masks
// are those of the same generator position on every thread count and device, and a resumed run
// draws what the uninterrupted one did.
#include <cstdint>
#include <vector>

#include "attnlab/ops.h"
#include "attnlab/random.h"

namespace attnlab::dropout_common {

// `groups` uniforms in [0, 1) from `generator` (advancing it as any draw of that many numbers).
inline std::vector<double> draw_uniforms(Generator& generator, std::int64_t groups) {
  const Generator::Draw d = generator.reserve(static_cast<std::uint64_t>(groups));
  std::vector<double> u(static_cast<std::size_t>(groups));
  for (std::int64_t i = 0; i < groups; ++i)
    u[static_cast<std::size_t>(i)] = philox_uniform(d.seed, d.offset, static_cast<std::uint64_t>(i));
  return u;
}

// x [G, ...] viewed as G groups of equal size, group g scaled by factors[g] -> x's shape;
// differentiable in x. The scaling is a batched [1, 1] x [1, M] product, which broadcasts one
// factor over a group (the binary ops broadcast only suffixes).
inline Tensor scale_groups(const Tensor& x, const std::vector<double>& factors) {
  const auto g = static_cast<std::int64_t>(factors.size());
  Tensor f = Tensor::from_vector<double>({g, 1, 1}, factors).to(x.dtype()).to(x.device());
  return matmul(f, x.reshape({g, 1, -1})).reshape(x.shape());
}

// Inverted dropout of whole groups: kept with probability 1 - p and scaled by 1 / (1 - p).
inline Tensor drop_groups(const Tensor& x, std::int64_t groups, double p, Generator& generator) {
  const std::vector<double> u = draw_uniforms(generator, groups);
  std::vector<double> factors(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) factors[i] = u[i] >= p ? 1.0 / (1.0 - p) : 0.0;
  return scale_groups(x, factors);
}

}  // namespace attnlab::dropout_common
