#pragma once
// Parameter initialisation from the core's counter-based generator, so that a seed gives the
// same weights on every machine and thread count.
#include "attnlab/random.h"
#include "attnlab/tensor.h"

namespace attnlab {

// Values uniform in [lo, hi), drawn on the host and then moved to `device`.
Tensor uniform(const Shape& shape, double lo, double hi, Generator& generator,
               DType dtype = DType::f32, Device device = Device::cpu());
// Normal(mean, std) by Box-Muller over the same stream.
Tensor normal(const Shape& shape, double mean, double std, Generator& generator,
              DType dtype = DType::f32, Device device = Device::cpu());
// Glorot & Bengio (2010): U(-a, a) with a = sqrt(6 / (fan_in + fan_out)), for a [out, in] weight.
Tensor xavier_uniform(std::int64_t fan_out, std::int64_t fan_in, Generator& generator,
                      DType dtype = DType::f32, Device device = Device::cpu());

}  // namespace attnlab
