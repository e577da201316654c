// index_mask: known values for i32 and i64 ids in f32, f64 and bf16 (infinite and finite
// constants), an empty tensor, the shape kept, and its errors. Not differentiable, so no
// gradient check: the result requires no gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"

using namespace attnlab;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("index_mask known values: the constant where ids equal the id, the other elsewhere") {
  for (DType ids_dtype : {DType::i32, DType::i64}) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      CAPTURE(dtype_name(ids_dtype));
      CAPTURE(dtype_name(dtype));
      const Tensor ids = Tensor::from_vector<std::int64_t>({2, 3}, {5, 0, 0, 7, 0, -3}).to(ids_dtype);
      const Tensor pad = index_mask(ids, 0, -kInf, 0.0, dtype);
      CHECK(pad.shape() == Shape{2, 3});
      CHECK(pad.dtype() == dtype);
      CHECK_FALSE(pad.requires_grad());
      CHECK(pad.to(DType::f64).to_vector<double>() == std::vector<double>{0, -kInf, -kInf, 0, -kInf, 0});
      const Tensor neg = index_mask(ids, -3, 1.5, -0.25, dtype);
      CHECK(neg.to(DType::f64).to_vector<double>() == std::vector<double>{-0.25, -0.25, -0.25, -0.25, -0.25, 1.5});
    }
  }
  // An id no element has: every element takes `otherwise`.
  const Tensor ids = Tensor::from_vector<std::int32_t>({4}, {1, 2, 3, 4});
  CHECK(index_mask(ids, 9, 1.0, 2.0, DType::f64).to_vector<double>() == std::vector<double>{2, 2, 2, 2});
  CHECK(index_mask(Tensor::empty({0, 3}, DType::i64), 0, 1.0, 0.0, DType::f32).shape() == Shape{0, 3});
}

TEST_CASE("index_mask refuses floating ids and an integer mask") {
  CHECK_THROWS_WITH_AS(index_mask(Tensor::zeros({2}, DType::f32), 0, 1.0, 0.0, DType::f32),
                       doctest::Contains("index_mask"), Error);
  CHECK_THROWS_WITH_AS(index_mask(Tensor::zeros({2}, DType::i64), 0, 1.0, 0.0, DType::i32),
                       doctest::Contains("index_mask: the mask's dtype must be floating (f32, f64, bf16), got i32"),
                       Error);
}
