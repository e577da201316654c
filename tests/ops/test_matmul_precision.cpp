// matmul and linear under the compute precisions: bf16 rounds the f32 operands (to values known
// by hand here), multiplies exactly and accumulates in f32; tf32 computes f32 on the CPU; f64 is
// never affected.
#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/attnlab.h"
#include "attnlab/precision.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::tolerance_for;

namespace {

const double kUlp = std::ldexp(1.0, -7);  // bf16's spacing in [1, 2)

// Operands whose bf16 roundings are known (see test_cast.cpp), and those roundings.
const std::vector<double> kA = {1 + kUlp / 2, 1 + 3 * kUlp / 2, 0.1,  // 2 x 3
                                2 - kUlp / 4, -(1 + kUlp / 2 + std::ldexp(1.0, -20)), 3};
const std::vector<double> kA16 = {1, 1 + 2 * kUlp, 0.10009765625, 2, -(1 + kUlp), 3};
const std::vector<double> kB = {0.1, 1 + kUlp / 2 + std::ldexp(1.0, -20),  // 3 x 2
                                3, 2 - kUlp / 4, 1 + 3 * kUlp / 2, -1};
const std::vector<double> kB16 = {0.10009765625, 1 + kUlp, 3, 2, 1 + 2 * kUlp, -1};

// Row-major [m, k] x [k, n] in double.
std::vector<double> product(const std::vector<double>& a, const std::vector<double>& b, int m, int k, int n,
                            bool trans_b = false) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int l = 0; l < k; ++l)
        c[static_cast<std::size_t>(i * n + j)] +=
            a[static_cast<std::size_t>(i * k + l)] * b[static_cast<std::size_t>(trans_b ? j * k + l : l * n + j)];
  return c;
}

std::vector<double> transpose(const std::vector<double>& a, int rows, int cols) {
  std::vector<double> t(a.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) t[static_cast<std::size_t>(j * rows + i)] = a[static_cast<std::size_t>(i * cols + j)];
  return t;
}

Tensor leaf(const Shape& shape, const std::vector<double>& values) {
  Tensor t = Tensor::from_vector<double>(shape, values).to(DType::f32);
  t.set_requires_grad();
  return t;
}

}  // namespace

TEST_CASE("bf16 matmul rounds the operands and accumulates in f32") {
  const Tensor a = leaf({2, 3}, kA), b = leaf({3, 2}, kB);
  const PrecisionGuard guard(Precision::bf16);
  const Tensor y = matmul(a, b);
  CHECK(y.dtype() == DType::f32);
  CHECK_TENSOR_NEAR(y, product(kA16, kB16, 2, 3, 2), tolerance_for(DType::f32));
  // Not the f32 product: the rounding is visible.
  const auto exact = product(kA, kB, 2, 3, 2);
  CHECK(std::abs(y.to_vector<double>()[0] - exact[0]) > 1e-3);
}

TEST_CASE("bf16 matmul gradients are f32 products of bf16 factors") {
  Tensor a = leaf({2, 3}, kA), b = leaf({3, 2}, kB);
  // An output gradient exactly representable in bf16, so dA = G B16^T and dB = A16^T G exactly.
  const std::vector<double> g = {0.5, -1, 2, 0.25};
  {
    const PrecisionGuard guard(Precision::bf16);
    matmul(a, b).backward(Tensor::from_vector<double>({2, 2}, g).to(DType::f32));
  }
  REQUIRE(a.grad().defined());
  CHECK(a.grad().dtype() == DType::f32);
  CHECK(b.grad().dtype() == DType::f32);
  CHECK_TENSOR_NEAR(a.grad(), product(g, transpose(kB16, 3, 2), 2, 2, 3), tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(b.grad(), product(transpose(kA16, 2, 3), g, 3, 2, 2), tolerance_for(DType::f32));
}

TEST_CASE("bf16 matmul rounds the output gradient in the backward products") {
  Tensor a = leaf({2, 3}, kA), b = leaf({3, 2}, kB);
  // 0.1 and 1 + ulp/2 are rounded to bf16 before the backward GEMMs.
  const std::vector<double> g = {0.1, 1 + kUlp / 2, -2, 0.5};
  const std::vector<double> g16 = {0.10009765625, 1, -2, 0.5};
  {
    const PrecisionGuard guard(Precision::bf16);
    matmul(a, b, false, false).backward(Tensor::from_vector<double>({2, 2}, g).to(DType::f32));
  }
  CHECK_TENSOR_NEAR(a.grad(), product(g16, transpose(kB16, 3, 2), 2, 2, 3), tolerance_for(DType::f32));
}

TEST_CASE("bf16 batched matmul with transposes matches the rounded product") {
  // [2, 2, 3] x [2, 2, 3]^T: each batch entry a A (2x3) times B^T where B is stored [2, 3].
  std::vector<double> a2 = kA, a2_16 = kA16;
  for (double v : kA) a2.push_back(-v);
  for (double v : kA16) a2_16.push_back(-v);
  const std::vector<double> bt = transpose(kB, 3, 2), bt16 = transpose(kB16, 3, 2);  // [2, 3]
  std::vector<double> b2 = bt, b2_16 = bt16;
  b2.insert(b2.end(), bt.begin(), bt.end());
  b2_16.insert(b2_16.end(), bt16.begin(), bt16.end());
  const PrecisionGuard guard(Precision::bf16);
  const Tensor y = matmul(Tensor::from_vector<double>({2, 2, 3}, a2).to(DType::f32),
                          Tensor::from_vector<double>({2, 2, 3}, b2).to(DType::f32), false, true);
  std::vector<double> want = product(kA16, bt16, 2, 3, 2, true);
  for (double v : product(kA16, bt16, 2, 3, 2, true)) want.push_back(-v);
  CHECK_TENSOR_NEAR(y, want, tolerance_for(DType::f32));
}

TEST_CASE("bf16 linear rounds x and the weight but adds the f32 bias") {
  Tensor x = leaf({2, 3}, kA);
  Tensor w = leaf({2, 3}, transpose(kB, 3, 2));  // [out 2, in 3]
  Tensor bias = leaf({2}, {0.1, -0.3});
  const PrecisionGuard guard(Precision::bf16);
  const Tensor y = linear(x, w, bias);
  CHECK(y.dtype() == DType::f32);
  std::vector<double> want = product(kA16, kB16, 2, 3, 2);
  const auto b32 = bias.to_vector<double>();  // f32(0.1), f32(-0.3): not rounded to bf16
  for (std::size_t i = 0; i < want.size(); ++i) want[i] += b32[i % 2];
  CHECK_TENSOR_NEAR(y, want, tolerance_for(DType::f32));

  const std::vector<double> g = {0.1, 1 + kUlp / 2, -2, 0.5};
  y.backward(Tensor::from_vector<double>({2, 2}, g).to(DType::f32));
  const std::vector<double> g16 = {0.10009765625, 1, -2, 0.5};
  CHECK_TENSOR_NEAR(x.grad(), product(g16, transpose(kB16, 3, 2), 2, 2, 3), tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(w.grad(), product(transpose(g16, 2, 2), kA16, 2, 2, 3), tolerance_for(DType::f32));
  // The bias gradient sums the f32 gradient.
  CHECK_TENSOR_NEAR(bias.grad(), std::vector<double>{0.1f + -2.0, static_cast<float>(1 + kUlp / 2) + 0.5},
                    tolerance_for(DType::f32));
}

TEST_CASE("tf32 precision computes fp32 on the cpu") {
  const Tensor a = testing::random_tensor({5, 7}, 1), b = testing::random_tensor({7, 3}, 2);
  const Tensor exact = matmul(a, b);
  const PrecisionGuard guard(Precision::tf32);
  CHECK_TENSOR_NEAR(matmul(a, b), exact, testing::Tolerance{0.0, 0.0});
}

TEST_CASE("f64 products ignore the reduced precisions") {
  const Tensor a = Tensor::from_vector<double>({2, 3}, kA), b = Tensor::from_vector<double>({3, 2}, kB);
  const PrecisionGuard guard(Precision::bf16);
  const Tensor y = matmul(a, b);
  CHECK(y.dtype() == DType::f64);
  CHECK_TENSOR_NEAR(y, product(kA, kB, 2, 3, 2), tolerance_for(DType::f64));
  CHECK_TENSOR_NEAR(linear(a, Tensor::from_vector<double>({2, 3}, transpose(kB, 3, 2))), product(kA, kB, 2, 3, 2),
                    tolerance_for(DType::f64));
}
