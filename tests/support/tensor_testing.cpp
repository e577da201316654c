#include "support/tensor_testing.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

namespace attnlab::testing {

Tensor random_tensor(const Shape& shape, std::uint64_t seed, double lo, double hi, DType dtype) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(static_cast<std::size_t>(shape.numel()));
  for (auto& v : values) v = dist(rng);
  return Tensor::from_vector<double>(shape, values).to(dtype);
}

Tensor random_ids(const Shape& shape, std::uint64_t seed, std::int64_t vocab, DType dtype) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> dist(0, vocab - 1);
  std::vector<std::int64_t> values(static_cast<std::size_t>(shape.numel()));
  for (auto& v : values) v = dist(rng);
  return Tensor::from_vector<std::int64_t>(shape, values).to(dtype);
}

std::string compare(const Tensor& got, const std::vector<double>& want, Tolerance tol) {
  if (static_cast<std::size_t>(got.numel()) != want.size())
    return fmt::format("{} has {} elements, expected {}", got.str(), got.numel(), want.size());
  const auto values = got.to_vector<double>();
  double worst = -1;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double err = std::abs(values[i] - want[i]);
    const double bound = tol.abs + tol.rel * std::abs(want[i]);
    const bool bad = !(err <= bound) && !(std::isinf(want[i]) && values[i] == want[i]);
    if (bad && (worst < 0 || err > worst || std::isnan(err))) {
      worst = std::isnan(err) ? 1e300 : err;
      worst_i = i;
    }
  }
  if (worst < 0) return {};
  return fmt::format("{}: element {} is {} but expected {} (tolerance abs {} rel {})", got.str(),
                     worst_i, values[worst_i], want[worst_i], tol.abs, tol.rel);
}

std::string compare(const Tensor& got, const Tensor& want, Tolerance tol) {
  if (got.shape() != want.shape())
    return fmt::format("shape {} differs from expected {}", got.shape().str(), want.shape().str());
  return compare(got, want.to_vector<double>(), tol);
}

}  // namespace attnlab::testing
