#include "attnlab/init.h"

#include <cmath>
#include <vector>

namespace attnlab {

Tensor uniform(const Shape& shape, double lo, double hi, Generator& generator, DType dtype,
               Device device) {
  const auto n = static_cast<std::uint64_t>(shape.numel());
  const auto draw = generator.reserve(n);
  std::vector<double> values(n);
  for (std::uint64_t i = 0; i < n; ++i)
    values[i] = lo + (hi - lo) * static_cast<double>(philox_uniform(draw.seed, draw.offset, i));
  return Tensor::from_vector<double>(shape, values).to(dtype).to(device);
}

Tensor normal(const Shape& shape, double mean, double std, Generator& generator, DType dtype,
              Device device) {
  const auto n = static_cast<std::uint64_t>(shape.numel());
  const auto draw = generator.reserve(2 * n);
  std::vector<double> values(n);
  constexpr double kTwoPi = 6.283185307179586476925;
  for (std::uint64_t i = 0; i < n; ++i) {
    // Box-Muller on (u1, u2); 1 - u keeps the logarithm finite.
    const double u1 = 1.0 - philox_uniform(draw.seed, draw.offset, 2 * i);
    const double u2 = philox_uniform(draw.seed, draw.offset, 2 * i + 1);
    values[i] = mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
  }
  return Tensor::from_vector<double>(shape, values).to(dtype).to(device);
}

Tensor xavier_uniform(std::int64_t fan_out, std::int64_t fan_in, Generator& generator, DType dtype,
                      Device device) {
  const double a = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform({fan_out, fan_in}, -a, a, generator, dtype, device);
}

}  // namespace attnlab
