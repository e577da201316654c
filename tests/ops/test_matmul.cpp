#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

// Plain triple loop reference for one [m, k] x [k, n] product over stored operands.
std::vector<double> reference(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const auto va = a.to_vector<double>();
  const auto vb = b.to_vector<double>();
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const std::int64_t m = ta ? sa[-1] : sa[-2], k = ta ? sa[-2] : sa[-1];
  const std::int64_t n = tb ? sb[-2] : sb[-1];
  const std::int64_t batch = sa.outer(sa.rank() - 2);
  const bool shared = sb.rank() == 2;
  std::vector<double> out(static_cast<std::size_t>(batch * m * n), 0.0);
  for (std::int64_t p = 0; p < batch; ++p) {
    const double* pa = va.data() + p * m * k;
    const double* pb = vb.data() + (shared ? 0 : p * k * n);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t l = 0; l < k; ++l)
          s += (ta ? pa[l * m + i] : pa[i * k + l]) * (tb ? pb[j * k + l] : pb[l * n + j]);
        out[static_cast<std::size_t>((p * m + i) * n + j)] = s;
      }
  }
  return out;
}

}  // namespace

TEST_CASE("matmul known values for every transpose combination") {
  // A = [[1 2 3] [4 5 6]] (2x3), B = [[7 8] [9 10] [11 12]] (3x2): A B = [[58 64] [139 154]].
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor at = Tensor::from_vector<float>({3, 2}, {1, 4, 2, 5, 3, 6});     // A^T stored
  Tensor bt = Tensor::from_vector<float>({2, 3}, {7, 9, 11, 8, 10, 12});  // B^T stored
  const std::vector<double> want = {58, 64, 139, 154};
  const auto tol = tolerance_for(DType::f32);
  CHECK(matmul(a, b).shape() == Shape{2, 2});
  CHECK_TENSOR_NEAR(matmul(a, b), want, tol);
  CHECK_TENSOR_NEAR(matmul(at, b, true, false), want, tol);
  CHECK_TENSOR_NEAR(matmul(a, bt, false, true), want, tol);
  CHECK_TENSOR_NEAR(matmul(at, bt, true, true), want, tol);
  // B A = [[39 54 69] [49 68 87] [59 82 105]].
  CHECK_TENSOR_NEAR(matmul(b, a), {39, 54, 69, 49, 68, 87, 59, 82, 105}, tol);
  // A A^T through trans_b = [[14 32] [32 77]].
  CHECK_TENSOR_NEAR(matmul(a, a, false, true), {14, 32, 32, 77}, tol);
  // A^T A through trans_a.
  CHECK_TENSOR_NEAR(matmul(a, a, true, false), {17, 22, 27, 22, 29, 36, 27, 36, 45}, tol);
}

TEST_CASE("matmul f64 matches f32 values") {
  Tensor a = Tensor::from_vector<double>({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector<double>({2, 2}, {0.5, -1, 2, 0.25});
  Tensor c = matmul(a, b);
  CHECK(c.dtype() == DType::f64);
  CHECK_TENSOR_NEAR(c, {4.5, -0.5, 9.5, -2}, tolerance_for(DType::f64));
}

TEST_CASE("matmul batched known values") {
  // Two 2x2 products: [[1 2] [3 4]] I = itself; [[1 1] [0 1]] [[2 0] [1 3]] = [[3 3] [1 3]].
  Tensor a = Tensor::from_vector<float>({2, 2, 2}, {1, 2, 3, 4, 1, 1, 0, 1});
  Tensor b = Tensor::from_vector<float>({2, 2, 2}, {1, 0, 0, 1, 2, 0, 1, 3});
  Tensor c = matmul(a, b);
  CHECK(c.shape() == Shape{2, 2, 2});
  CHECK_TENSOR_NEAR(c, {1, 2, 3, 4, 3, 3, 1, 3}, tolerance_for(DType::f32));
  // Rank 4, every transpose combination, against the loop reference.
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    Tensor x = random_tensor(ta ? Shape{2, 3, 4, 5} : Shape{2, 3, 5, 4}, 10 + t);
    Tensor y = random_tensor(tb ? Shape{2, 3, 6, 4} : Shape{2, 3, 4, 6}, 20 + t);
    Tensor z = matmul(x, y, ta, tb);
    CHECK(z.shape() == Shape{2, 3, 5, 6});
    CHECK_TENSOR_NEAR(z, reference(x, y, ta, tb), tolerance_for(DType::f32));
  }
}

TEST_CASE("matmul rank-2 b is shared by the batch") {
  // Every entry of a times B = [[1 0 2] [0 1 3]].
  Tensor a = Tensor::from_vector<float>({3, 1, 2}, {1, 2, 3, 4, -1, 1});
  Tensor b = Tensor::from_vector<float>({2, 3}, {1, 0, 2, 0, 1, 3});
  Tensor c = matmul(a, b);
  CHECK(c.shape() == Shape{3, 1, 3});
  CHECK_TENSOR_NEAR(c, {1, 2, 8, 3, 4, 18, -1, 1, 1}, tolerance_for(DType::f32));
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    Tensor x = random_tensor(ta ? Shape{4, 3, 5} : Shape{4, 5, 3}, 30 + t);
    Tensor y = random_tensor(tb ? Shape{7, 3} : Shape{3, 7}, 40 + t);
    CHECK_TENSOR_NEAR(matmul(x, y, ta, tb), reference(x, y, ta, tb), tolerance_for(DType::f32));
  }
}

TEST_CASE("matmul large batch of small products matches the reference") {
  // Enough entries that the batch is split across threads.
  Tensor x = random_tensor({64, 8, 8}, 50);
  Tensor y = random_tensor({64, 8, 8}, 51);
  CHECK_TENSOR_NEAR(matmul(x, y, false, true), reference(x, y, false, true),
                    tolerance_for(DType::f32));
}

TEST_CASE("matmul with an empty inner extent gives zeros") {
  Tensor c = matmul(Tensor::zeros({2, 0}), Tensor::zeros({0, 3}));
  CHECK(c.shape() == Shape{2, 3});
  CHECK_TENSOR_NEAR(c, std::vector<double>(6, 0.0), tolerance_for(DType::f32));
}

TEST_CASE("linear known values with and without bias") {
  // x [2, 3], W [2, 3] ([out, in]): x W^T = [[1*1+2*0+3*1, 1*2+2*1+3*0] ...].
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = Tensor::from_vector<float>({2, 3}, {1, 0, 1, 2, 1, 0});
  Tensor bias = Tensor::from_vector<float>({2}, {0.5, -1});
  const auto tol = tolerance_for(DType::f32);
  Tensor y = linear(x, w);
  CHECK(y.shape() == Shape{2, 2});
  CHECK_TENSOR_NEAR(y, {4, 4, 10, 13}, tol);
  CHECK_TENSOR_NEAR(linear(x, w, bias), {4.5, 3, 10.5, 12}, tol);
  // Leading axes are kept: x [2, 1, 3] -> [2, 1, 2]; a single vector x [3] -> [2].
  Tensor y3 = linear(x.reshape({2, 1, 3}), w, bias);
  CHECK(y3.shape() == Shape{2, 1, 2});
  CHECK_TENSOR_NEAR(y3, {4.5, 3, 10.5, 12}, tol);
  Tensor y1 = linear(Tensor::from_vector<float>({3}, {1, 2, 3}), w, bias);
  CHECK(y1.shape() == Shape{2});
  CHECK_TENSOR_NEAR(y1, {4.5, 3}, tol);
}

TEST_CASE("matmul gradients for every transpose combination") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    Tensor a = random_tensor(ta ? Shape{3, 2} : Shape{2, 3}, 60 + t);
    Tensor b = random_tensor(tb ? Shape{4, 3} : Shape{3, 4}, 70 + t);
    CAPTURE(ta);
    CAPTURE(tb);
    CHECK_GRADCHECK([&](const std::vector<Tensor>& x) { return matmul(x[0], x[1], ta, tb); }, {a, b});
  }
}

TEST_CASE("matmul gradients batched") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    Tensor a = random_tensor(ta ? Shape{2, 2, 3, 2} : Shape{2, 2, 2, 3}, 80 + t);
    Tensor b = random_tensor(tb ? Shape{2, 2, 4, 3} : Shape{2, 2, 3, 4}, 90 + t);
    CAPTURE(ta);
    CAPTURE(tb);
    CHECK_GRADCHECK([&](const std::vector<Tensor>& x) { return matmul(x[0], x[1], ta, tb); }, {a, b});
  }
}

TEST_CASE("matmul gradients with a shared rank-2 b") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    Tensor a = random_tensor(ta ? Shape{3, 3, 2} : Shape{3, 2, 3}, 100 + t);
    Tensor b = random_tensor(tb ? Shape{4, 3} : Shape{3, 4}, 110 + t);
    CAPTURE(ta);
    CAPTURE(tb);
    CHECK_GRADCHECK([&](const std::vector<Tensor>& x) { return matmul(x[0], x[1], ta, tb); }, {a, b});
  }
}

TEST_CASE("matmul gradient when only one operand requires grad") {
  Tensor a = random_tensor({2, 3}, 120).to(DType::f64);
  Tensor b = random_tensor({3, 2}, 121).to(DType::f64);
  b.set_requires_grad(true);
  Tensor c = matmul(a, b);
  c.backward(Tensor::full({2, 2}, 1.0, DType::f64));
  // dB[k, n] = sum_m A[m, k].
  const auto va = a.to_vector<double>();
  std::vector<double> want;
  for (int k = 0; k < 3; ++k)
    for (int n = 0; n < 2; ++n) want.push_back(va[static_cast<std::size_t>(k)] + va[static_cast<std::size_t>(3 + k)]);
  CHECK_TENSOR_NEAR(b.grad(), want, tolerance_for(DType::f64));
}

TEST_CASE("linear gradients with and without bias") {
  Tensor x = random_tensor({2, 2, 3}, 130);
  Tensor w = random_tensor({4, 3}, 131);
  Tensor bias = random_tensor({4}, 132);
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return linear(v[0], v[1], v[2]); }, {x, w, bias});
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return linear(v[0], v[1]); }, {x, w});
  Tensor x1 = random_tensor({3}, 133);
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return linear(v[0], v[1], v[2]); }, {x1, w, bias});
}

TEST_CASE("matmul errors name the op and both shapes") {
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})),
                       doctest::Contains("matmul: inner extents differ (3 vs 4) for a [2, 3] and b [4, 5]"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 3}), Tensor::zeros({5, 4}), false, true),
                       doctest::Contains("matmul: inner extents differ (3 vs 4) for a [2, 3] and b [5, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 4})),
                       doctest::Contains("matmul: batch axes differ for a [2, 2, 3] and b [3, 3, 4]"), Error);
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 3}), Tensor::zeros({2, 3, 4})),
                       doctest::Contains("matmul: batch axes differ for a [2, 3] and b [2, 3, 4]"), Error);
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 4}, DType::f64)),
                       doctest::Contains("matmul: dtypes differ"), Error);
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({3}), Tensor::zeros({3, 4})), doctest::Contains("rank >= 2"), Error);
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 3}, DType::i32), Tensor::zeros({3, 4}, DType::i32)),
                       doctest::Contains("expected a floating tensor"), Error);
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 3}, DType::bf16), Tensor::zeros({3, 4}, DType::bf16)),
                       doctest::Contains("matmul: dtype bf16 is not supported"), Error);
}

TEST_CASE("linear errors name the shapes") {
  Tensor w = Tensor::zeros({4, 3});
  CHECK_THROWS_WITH_AS(linear(Tensor::zeros({2, 5}), w),
                       doctest::Contains("linear: x [2, 5] must end with the weight's in extent 3"), Error);
  CHECK_THROWS_WITH_AS(linear(Tensor::zeros({2, 3}), w, Tensor::zeros({3})),
                       doctest::Contains("linear: bias [3] must be [out] = [4]"), Error);
  CHECK_THROWS_WITH_AS(linear(Tensor::zeros({2, 3}), Tensor::zeros({3})), doctest::Contains("must be [out, in]"),
                       Error);
  CHECK_THROWS_WITH_AS(linear(Tensor::zeros({2, 3}), Tensor::zeros({4, 3}, DType::f64)),
                       doctest::Contains("linear: dtypes differ"), Error);
}
