#pragma once
// Helpers for tests: seeded random tensors and value comparison with clear failure messages.
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/tensor.h"
#include "attnlab/threads.h"
#include "support/tolerance.h"

namespace attnlab::testing {

// Restores the thread count when a test scope ends, even after a failed check.
struct ThreadCountGuard {
  int saved = num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

// Uniform values in [lo, hi) from a fixed-seed generator (independent of the core's RNG).
Tensor random_tensor(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0,
                     DType dtype = DType::f32);
// Random integer ids in [0, vocab).
Tensor random_ids(const Shape& shape, std::uint64_t seed, std::int64_t vocab, DType dtype = DType::i64);

// Empty string when every |got - want| <= tol.abs + tol.rel * |want|; else the worst element.
std::string compare(const Tensor& got, const std::vector<double>& want, Tolerance tol);
std::string compare(const Tensor& got, const Tensor& want, Tolerance tol);

}  // namespace attnlab::testing

// CHECK that a tensor matches expected values under the dtype's tolerance (or the given one).
#define CHECK_TENSOR_NEAR(got, want, ...) \
  CHECK_MESSAGE(::attnlab::testing::compare(got, want, __VA_ARGS__).empty(), \
                ::attnlab::testing::compare(got, want, __VA_ARGS__))
