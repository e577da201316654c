// linear_relu = relu(linear(x, W, b)) as one op: known values (pre-activations exactly 0 and
// negative), equality to the bit with relu(linear) on the CPU in every precision, finite
// differences in f64, bf16 rounding, errors.
#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/attnlab.h"
#include "attnlab/precision.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

const testing::Tolerance kExact{0.0, 0.0};

Tensor leaf(const Shape& shape, const std::vector<double>& values, DType dtype) {
  Tensor t = Tensor::from_vector<double>(shape, values).to(dtype);
  t.set_requires_grad();
  return t;
}

Tensor leaf_copy(const Tensor& t) {
  Tensor c = t.detach().clone();
  c.set_requires_grad();
  return c;
}

}  // namespace

TEST_CASE("linear_relu known values with zero and negative pre-activations") {
  // z = x W^T + b = [[0, 3, 1.5], [-3, 0, 1]]: two pre-activations are exactly 0 (1 - 2 + 1 and
  // -2 + 3 - 1), two negative.
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    Tensor x = leaf({2, 2}, {1, 2, -1, 3}, dtype);
    Tensor w = leaf({3, 2}, {1, -1, 2, 1, 0.5, 0.5}, dtype);
    Tensor b = leaf({3}, {1, -1, 0}, dtype);
    const Tensor y = linear_relu(x, w, b);
    CHECK(y.dtype() == dtype);
    CHECK(y.shape() == Shape{2, 3});
    CHECK_TENSOR_NEAR(y, {0, 3, 1.5, 0, 0, 1}, kExact);
    // dz = dy * [z > 0] = [[0, 2, 3], [0, 0, 6]] (0 at z = 0, as relu), then linear's gradients:
    //   db = [0, 2, 9], dx = dz W, dW = dz^T x.
    y.backward(Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6}).to(dtype));
    CHECK_TENSOR_NEAR(b.grad(), {0, 2, 9}, kExact);
    CHECK_TENSOR_NEAR(x.grad(), {5.5, 3.5, 3, 3}, kExact);
    CHECK_TENSOR_NEAR(w.grad(), {0, 0, 2, 4, -3, 24}, kExact);
  }
}

TEST_CASE("linear_relu known values without a bias and for a single row") {
  const Tensor x = Tensor::from_vector<double>({2, 2}, {1, 2, -1, 3});
  const Tensor w = Tensor::from_vector<double>({3, 2}, {1, -1, 2, 1, 0.5, 0.5});
  // x W^T = [[-1, 4, 1.5], [-4, 1, 1]].
  CHECK_TENSOR_NEAR(linear_relu(x, w), {0, 4, 1.5, 0, 1, 1}, kExact);
  const Tensor y1 = linear_relu(Tensor::from_vector<double>({2}, {-1, 3}), w, Tensor::from_vector<double>({3}, {1, -1, 0}));
  CHECK(y1.shape() == Shape{3});
  CHECK_TENSOR_NEAR(y1, {0, 0, 1}, kExact);
  // Batched x [2, 1, 2] keeps its leading axes.
  CHECK(linear_relu(x.reshape({2, 1, 2}), w).shape() == Shape{2, 1, 3});
}

TEST_CASE("linear_relu equals relu of linear to the bit on the cpu in every precision") {
  for (Precision precision : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    for (bool with_bias : {true, false}) {
      CAPTURE(precision_name(precision));
      CAPTURE(with_bias);
      const Tensor x0 = random_tensor({3, 5, 16}, 1), w0 = random_tensor({24, 16}, 2), b0 = random_tensor({24}, 3);
      const Tensor dy = random_tensor({3, 5, 24}, 4);
      Tensor x1 = leaf_copy(x0), w1 = leaf_copy(w0), b1 = with_bias ? leaf_copy(b0) : Tensor();
      Tensor x2 = leaf_copy(x0), w2 = leaf_copy(w0), b2 = with_bias ? leaf_copy(b0) : Tensor();
      const PrecisionGuard guard(precision);
      const Tensor fused = linear_relu(x1, w1, b1);
      const Tensor unfused = relu(linear(x2, w2, b2));
      CHECK(fused.dtype() == DType::f32);
      CHECK_TENSOR_NEAR(fused, unfused, kExact);
      fused.backward(dy);
      unfused.backward(dy);
      CHECK_TENSOR_NEAR(x1.grad(), x2.grad(), kExact);
      CHECK_TENSOR_NEAR(w1.grad(), w2.grad(), kExact);
      if (with_bias) CHECK_TENSOR_NEAR(b1.grad(), b2.grad(), kExact);
    }
  }
}

TEST_CASE("linear_relu gradients (finite differences)") {
  // Random values: the pre-activations are of both signs and, as checked, away from the kink at
  // 0, where the central difference is not the derivative.
  const Tensor x = random_tensor({2, 3, 5}, 11, -1, 1, DType::f64);
  const Tensor w = random_tensor({7, 5}, 12, -1, 1, DType::f64);
  const Tensor b = random_tensor({7}, 13, -1, 1, DType::f64);
  const auto z = linear(x, w, b).to_vector<double>();
  int negative = 0;
  for (double v : z) {
    REQUIRE(std::abs(v) > 1e-3);
    negative += v < 0;
  }
  CHECK(negative > 5);
  CHECK(negative < static_cast<int>(z.size()) - 5);
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return linear_relu(v[0], v[1], v[2]); }, {x, w, b});
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return linear_relu(v[0], v[1]); }, {x, w});
}

TEST_CASE("linear_relu gradients (finite differences) with pre-activations exactly 0") {
  // Pre-activations of exactly 0 that the checked input cannot move, so that the central
  // difference is the derivative everywhere (at a 0 that the input moves it is the mean of the two
  // one-sided slopes, which no convention matches). Such an entry's gradient reaches the checked
  // input multiplied by 0 whatever the mask says there, so this checks that the zeros break
  // nothing; the convention itself (0 at z = 0) is in the known-value test above.
  //   checking W: x's row 1 is zero and b[2] = b[3] = 0, so z[1, 2] = z[1, 3] = 0 whatever W is;
  //   checking x: W's row 3 is zero and b[3] = 0, so z[:, 3] = 0 whatever x is.
  // The other entries are of both signs.
  const Tensor x = random_tensor({3, 4}, 21, -1, 1, DType::f64);
  const Tensor w = random_tensor({5, 4}, 22, -1, 1, DType::f64);
  std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  for (std::size_t i = 4; i < 8; ++i) xv[i] = 0;
  for (std::size_t i = 12; i < 16; ++i) wv[i] = 0;
  const Tensor x_zero_row = Tensor::from_vector<double>({3, 4}, xv);
  const Tensor w_zero_row = Tensor::from_vector<double>({5, 4}, wv);
  const Tensor b = Tensor::from_vector<double>({5}, {0.3, -0.4, 0, 0, 0.2});

  const auto zw = linear(x_zero_row, w, b).to_vector<double>();
  CHECK(zw[1 * 5 + 2] == 0.0);
  CHECK(zw[1 * 5 + 3] == 0.0);
  CHECK_GRADCHECK([&](const std::vector<Tensor>& v) { return linear_relu(x_zero_row, v[0], b); }, {w});

  const auto zx = linear(x, w_zero_row, b).to_vector<double>();
  for (std::size_t r = 0; r < 3; ++r) CHECK(zx[r * 5 + 3] == 0.0);
  CHECK_GRADCHECK([&](const std::vector<Tensor>& v) { return linear_relu(v[0], w_zero_row, b); }, {x});
}

TEST_CASE("linear_relu under bf16 precision rounds x and the weight and masks the rounded sum") {
  const double ulp = std::ldexp(1.0, -7);  // bf16's spacing in [1, 2)
  // x and W round to {1, 3} and {{1, 1}, {-1, 1}}: z = [4 + 0.1, -1 + 3 - 2] = [4.1, 0]. In f32
  // z[1] would be 2^-7 > 0: the rounding decides the mask here.
  Tensor x = leaf({1, 2}, {1 + ulp / 2, 3}, DType::f32);
  Tensor w = leaf({2, 2}, {1, 1, -1, 1 + ulp / 2}, DType::f32);
  Tensor b = leaf({2}, {0.1, -2}, DType::f32);
  CHECK(linear_relu(x, w, b).to_vector<double>()[1] == ulp);  // fp32
  const PrecisionGuard guard(Precision::bf16);
  const Tensor y = linear_relu(x, w, b);
  CHECK(y.dtype() == DType::f32);
  CHECK_TENSOR_NEAR(y, {static_cast<double>(0.1f + 4.0f), 0}, kExact);
  // dz = [1, 0]; the backward products read bf16 copies: dx = dz W16, dW = dz^T x16.
  y.backward(Tensor::from_vector<double>({1, 2}, {1, 1}).to(DType::f32));
  CHECK(x.grad().dtype() == DType::f32);
  CHECK_TENSOR_NEAR(b.grad(), {1, 0}, kExact);
  CHECK_TENSOR_NEAR(x.grad(), {1, 1}, kExact);
  CHECK_TENSOR_NEAR(w.grad(), {1, 3, 0, 0}, kExact);
}

TEST_CASE("linear_relu errors name the op and the shapes as linear does") {
  const Tensor w = Tensor::zeros({4, 3});
  CHECK_THROWS_WITH_AS(linear_relu(Tensor::zeros({2, 5}), w),
                       doctest::Contains("linear_relu: x [2, 5] must end with the weight's in extent 3"), Error);
  CHECK_THROWS_WITH_AS(linear_relu(Tensor::zeros({2, 3}), w, Tensor::zeros({3})),
                       doctest::Contains("linear_relu: bias [3] must be [out] = [4]"), Error);
  CHECK_THROWS_WITH_AS(linear_relu(Tensor::zeros({2, 3}), Tensor::zeros({3})), doctest::Contains("must be [out, in]"),
                       Error);
  CHECK_THROWS_WITH_AS(linear_relu(Tensor::zeros({2, 3}), Tensor::zeros({4, 3}, DType::f64)),
                       doctest::Contains("linear_relu: dtypes differ"), Error);
}

TEST_CASE("linear_relu with no rows gives an empty output and zero bias gradient") {
  Tensor b = leaf({3}, {1, 2, 3}, DType::f32);
  const Tensor y = linear_relu(Tensor::zeros({0, 2}), Tensor::zeros({3, 2}), b);
  CHECK(y.shape() == Shape{0, 3});
  y.backward(Tensor::zeros({0, 3}));
  CHECK_TENSOR_NEAR(b.grad(), {0, 0, 0}, kExact);
}
