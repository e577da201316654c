#include <doctest/doctest.h>

#include <numeric>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

// The [2, 3, 4] tensor with x[i][j][k] = 12 i + 4 j + k.
Tensor iota234(DType dtype = DType::f32) {
  std::vector<double> v(24);
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::from_vector<double>({2, 3, 4}, v).to(dtype);
}

// Naive reference: out[idx] = x[idx permuted back], element by element.
std::vector<double> reference_permute(const Tensor& x, const std::vector<int>& dims) {
  const auto in = x.to_vector<double>();
  const auto& s = x.shape().dims();
  const std::size_t r = s.size();
  std::vector<std::int64_t> in_strides(r, 1);
  for (std::size_t a = r; a-- > 1;) in_strides[a - 1] = in_strides[a] * s[a];
  std::vector<std::int64_t> out_dims(r);
  for (std::size_t i = 0; i < r; ++i) out_dims[i] = s[static_cast<std::size_t>(dims[i])];
  std::vector<double> out(in.size());
  std::vector<std::int64_t> idx(r, 0);
  for (std::size_t n = 0; n < out.size(); ++n) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < r; ++i) off += idx[i] * in_strides[static_cast<std::size_t>(dims[i])];
    out[n] = in[static_cast<std::size_t>(off)];
    for (std::size_t i = r; i-- > 0;) {
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("permute and transpose known values") {
  Tensor x = iota234();
  Tensor p = permute(x, {2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK_TENSOR_NEAR(p, {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23},
                    tolerance_for(DType::f32));
  Tensor t = transpose(x, 1, 2);
  CHECK(t.shape() == Shape{2, 4, 3});
  CHECK_TENSOR_NEAR(t, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 16, 20, 13, 17, 21, 14, 18, 22, 15, 19, 23},
                    tolerance_for(DType::f32));
  // Negative axes, and the identity.
  CHECK(transpose(x, -1, -2).to_vector<float>() == t.to_vector<float>());
  CHECK(permute(x, {-1, 0, 1}).to_vector<float>() == p.to_vector<float>());
  CHECK(permute(x, {0, 1, 2}).to_vector<float>() == x.to_vector<float>());
  Tensor t02 = transpose(x, 0, 2);
  CHECK(t02.shape() == Shape{4, 3, 2});
  CHECK_TENSOR_NEAR(t02, reference_permute(x, {2, 1, 0}), tolerance_for(DType::f32));
  // Size-1 axes and rank 0.
  Tensor y = random_tensor({3, 1, 5}, 4);
  CHECK_TENSOR_NEAR(permute(y, {1, 2, 0}), reference_permute(y, {1, 2, 0}), tolerance_for(DType::f32));
  Tensor scalar = Tensor::full(Shape{}, 3.0);
  CHECK(permute(scalar, {}).item() == 3.0);
}

TEST_CASE("permute head split and merge match a naive reference") {
  // [B, T, H, D] -> [B, H, T, D] and back, large enough to run the threaded path.
  Tensor x = random_tensor({4, 64, 8, 32}, 7);
  Tensor heads = permute(x, {0, 2, 1, 3});
  CHECK(heads.shape() == Shape{4, 8, 64, 32});
  CHECK_TENSOR_NEAR(heads, reference_permute(x, {0, 2, 1, 3}), testing::Tolerance{0, 0});
  Tensor back = permute(heads, {0, 2, 1, 3});
  CHECK(back.to_vector<float>() == x.to_vector<float>());
  // A strided (last axis not contiguous) transpose, large.
  Tensor m = random_tensor({300, 200}, 8);
  CHECK_TENSOR_NEAR(transpose(m, 0, 1), reference_permute(m, {1, 0}), testing::Tolerance{0, 0});
  Tensor z = random_tensor({3, 4, 5, 6}, 9);
  for (const std::vector<int>& dims : std::vector<std::vector<int>>{
           {3, 1, 0, 2}, {1, 0, 3, 2}, {0, 1, 3, 2}, {2, 3, 0, 1}, {3, 2, 1, 0}}) {
    CHECK_TENSOR_NEAR(permute(z, dims), reference_permute(z, dims), testing::Tolerance{0, 0});
  }
}

TEST_CASE("permute moves integer and bf16 tensors") {
  Tensor x64 = iota234(DType::i64);
  Tensor p = permute(x64, {2, 0, 1});
  CHECK(p.dtype() == DType::i64);
  CHECK(p.to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23});
  Tensor x32 = iota234(DType::i32);
  CHECK(transpose(x32, 1, 2).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 16, 20, 13, 17, 21, 14, 18, 22, 15, 19, 23});
  Tensor xb = iota234(DType::bf16);
  Tensor pb = permute(xb, {2, 0, 1});
  CHECK(pb.dtype() == DType::bf16);
  CHECK(pb.to_vector<float>() == p.to_vector<float>());
  Tensor xu = iota234(DType::u8);
  CHECK(permute(xu, {1, 2, 0}).to_vector<double>() == reference_permute(xu, {1, 2, 0}));
  // split and concat move bytes too.
  auto pieces = split(x64, 1, {1, 2});
  CHECK(pieces[0].to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3, 12, 13, 14, 15});
  CHECK(concat(pieces, 1).to_vector<std::int64_t>() == x64.to_vector<std::int64_t>());
  auto bpieces = split(xb, 2, {3, 1});
  CHECK(concat(bpieces, 2).to_vector<float>() == xb.to_vector<float>());
}

TEST_CASE("split and concat known values") {
  Tensor x = iota234();
  auto a = split(x, 1, {1, 2});
  REQUIRE(a.size() == 2);
  CHECK(a[0].shape() == Shape{2, 1, 4});
  CHECK(a[1].shape() == Shape{2, 2, 4});
  CHECK_TENSOR_NEAR(a[0], {0, 1, 2, 3, 12, 13, 14, 15}, tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(a[1], {4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23}, tolerance_for(DType::f32));
  auto b = split(x, -1, {1, 0, 3});
  REQUIRE(b.size() == 3);
  CHECK(b[1].shape() == Shape{2, 3, 0});
  CHECK_TENSOR_NEAR(b[0], {0, 4, 8, 12, 16, 20}, tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(b[2], {1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23},
                    tolerance_for(DType::f32));
  auto c = split(x, 0, {1, 1});
  CHECK_TENSOR_NEAR(c[1], {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, tolerance_for(DType::f32));

  Tensor cat0 = concat({x, x}, 0);
  CHECK(cat0.shape() == Shape{4, 3, 4});
  std::vector<double> twice(48);
  for (std::size_t i = 0; i < 48; ++i) twice[i] = static_cast<double>(i % 24);
  CHECK_TENSOR_NEAR(cat0, twice, tolerance_for(DType::f32));
  Tensor cat2 = concat({b[2], b[0]}, 2);
  CHECK(cat2.shape() == Shape{2, 3, 4});
  CHECK_TENSOR_NEAR(cat2, {1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12, 17, 18, 19, 16, 21, 22, 23, 20},
                    tolerance_for(DType::f32));
  CHECK(concat({x}, 1).to_vector<float>() == x.to_vector<float>());
}

TEST_CASE("split then concat and permute then inverse are identities") {
  Tensor x = random_tensor({2, 5, 3, 4}, 11);
  for (int axis = 0; axis < 4; ++axis) {
    const std::int64_t n = x.dim(axis);
    std::vector<std::int64_t> sizes = n >= 3 ? std::vector<std::int64_t>{1, n - 2, 1}
                                             : std::vector<std::int64_t>{1, 0, n - 1};
    auto pieces = split(x, axis, sizes);
    CHECK(concat(pieces, axis).to_vector<float>() == x.to_vector<float>());
  }
  Tensor big = random_tensor({64, 300, 4}, 12);  // threaded copy path
  auto pieces = split(big, 1, {100, 150, 50});
  CHECK(concat(pieces, 1).to_vector<float>() == big.to_vector<float>());
  const std::vector<int> dims{3, 1, 0, 2};
  std::vector<int> inverse(4);
  for (int k = 0; k < 4; ++k) inverse[static_cast<std::size_t>(dims[static_cast<std::size_t>(k)])] = k;
  CHECK(permute(permute(x, dims), inverse).to_vector<float>() == x.to_vector<float>());
}

TEST_CASE("shape ops gradients (finite differences)") {
  Tensor x = random_tensor({2, 3, 4}, 21);
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return permute(v[0], {2, 0, 1}); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return permute(v[0], {1, 0, 2}); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return transpose(v[0], 0, 2); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return transpose(v[0], -1, -2); }, {x});
  // Split where only some pieces reach the output.
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return split(v[0], 2, {1, 2, 1})[1]; }, {x});
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& v) {
        auto p = split(v[0], 2, {1, 2, 1});
        return concat({p[2], p[0]}, 2);
      },
      {x});
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& v) {
        auto p = split(v[0], 1, {2, 1});
        return mul(p[1], p[1]);
      },
      {x});
  // Concat of several inputs, one of them a constant.
  Tensor y = random_tensor({2, 1, 4}, 22);
  Tensor z = random_tensor({2, 2, 4}, 23);
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return concat({v[0], v[1], v[2]}, 1); }, {x, y, z});
  Tensor constant = random_tensor({2, 3, 2}, 24, -1.0, 1.0, DType::f64);
  CHECK_GRADCHECK([&](const std::vector<Tensor>& v) { return concat({constant, v[0], constant}, 2); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return concat({v[0], v[0]}, 0); }, {x});
}

TEST_CASE("split backward gives zeros to unused pieces") {
  Tensor x = Tensor::from_vector<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  x.set_requires_grad(true);
  auto pieces = split(x, 1, {1, 3});
  CHECK(pieces[0].requires_grad());
  Tensor s = scale(pieces[1], 2.0);
  s.backward(Tensor::full(s.shape(), 1.0));
  CHECK_TENSOR_NEAR(x.grad(), {0, 2, 2, 2, 0, 2, 2, 2}, tolerance_for(DType::f32));
}

TEST_CASE("shape ops errors name the op and the shapes") {
  Tensor x = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(permute(x, {0, 0, 1}),
                       doctest::Contains("permute: dims [0, 0, 1] are not a permutation of the 3 axes of shape [2, 3, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(permute(x, {0, 1}), doctest::Contains("permute: dims [0, 1] are not a permutation"), Error);
  CHECK_THROWS_WITH_AS(permute(x, {0, 1, 3}), doctest::Contains("permute: dims [0, 1, 3]"), Error);
  CHECK_THROWS_WITH_AS(transpose(x, 0, 3), doctest::Contains("transpose: axis 3 is out of range for shape [2, 3, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(split(x, 1, {1, 1}),
                       doctest::Contains("split: sizes [1, 1] must be non-negative and sum to 3, the extent of axis 1 "
                                         "of shape [2, 3, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(split(x, 1, {4, -1}), doctest::Contains("split: sizes [4, -1]"), Error);
  CHECK_THROWS_WITH_AS(split(x, 3, {4}), doctest::Contains("split: axis 3 is out of range for shape [2, 3, 4]"), Error);
  CHECK_THROWS_WITH_AS(concat({x, Tensor::zeros({2, 5, 5})}, 1),
                       doctest::Contains("concat: part 1 has shape [2, 5, 5] but part 0 has shape [2, 3, 4]"), Error);
  CHECK_THROWS_WITH_AS(concat({x, Tensor::zeros({2, 3})}, 0),
                       doctest::Contains("concat: part 1 has shape [2, 3] but part 0 has shape [2, 3, 4]"), Error);
  CHECK_THROWS_WITH_AS(concat({}, 0), doctest::Contains("concat: empty list of tensors"), Error);
  CHECK_THROWS_WITH_AS(concat({x, Tensor::zeros({2, 3, 4}, DType::f64)}, 0), doctest::Contains("concat: dtypes differ"),
                       Error);
  CHECK_THROWS_WITH_AS(concat({x, Tensor()}, 0), doctest::Contains("concat: part 1 is undefined"), Error);
}
