#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::tolerance_for;

TEST_CASE("relu and gelu known values") {
  Tensor x = Tensor::from_vector<double>({5}, {-2.0, -0.5, 0.0, 0.5, 2.0});
  CHECK_TENSOR_NEAR(relu(x), {0, 0, 0, 0.5, 2.0}, tolerance_for(DType::f64));
  // gelu(x) = x Phi(x): Phi(0.5) = 0.691462461274013, Phi(2) = 0.977249868051821.
  CHECK_TENSOR_NEAR(gelu(x),
                    {-2 * (1 - 0.977249868051821), -0.5 * (1 - 0.691462461274013), 0.0,
                     0.5 * 0.691462461274013, 2 * 0.977249868051821},
                    testing::Tolerance{1e-12, 1e-12});
}

TEST_CASE("relu and gelu gradients (finite differences)") {
  // Keep values away from relu's kink at 0, where the central difference is not the derivative.
  Tensor x = testing::random_tensor({3, 7}, 11, 0.05, 1.0);
  Tensor neg = scale(testing::random_tensor({3, 7}, 12, 0.05, 1.0), -1.0);
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return relu(in[0]); }, {x});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return relu(in[0]); }, {neg});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return gelu(in[0]); }, {testing::random_tensor({3, 7}, 13, -3, 3)});
}

TEST_CASE("tanh and silu known values") {
  Tensor x = Tensor::from_vector<double>({5}, {-2.0, -0.5, 0.0, 0.5, 2.0});
  // tanh(0.5) = 0.46211715726000974, tanh(2) = 0.9640275800758169 (odd function).
  CHECK_TENSOR_NEAR(tanh(x),
                    {-0.9640275800758169, -0.46211715726000974, 0.0, 0.46211715726000974, 0.9640275800758169},
                    testing::Tolerance{1e-12, 1e-12});
  // silu(x) = x sigmoid(x): sigmoid(0.5) = 0.6224593312018546, sigmoid(2) = 0.8807970779778823,
  // sigmoid(-x) = 1 - sigmoid(x).
  CHECK_TENSOR_NEAR(silu(x),
                    {-2 * (1 - 0.8807970779778823), -0.5 * (1 - 0.6224593312018546), 0.0,
                     0.5 * 0.6224593312018546, 2 * 0.8807970779778823},
                    testing::Tolerance{1e-12, 1e-12});
}

TEST_CASE("tanh and silu stay finite for large inputs") {
  // A naive sigmoid 1 / (1 + exp(-x)) overflows exp for x = -1000; tanh must saturate at +-1.
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor x = Tensor::from_vector<double>({4}, {-1000.0, -100.0, 100.0, 1000.0}).to(dtype);
    CHECK_TENSOR_NEAR(tanh(x), {-1.0, -1.0, 1.0, 1.0}, tolerance_for(dtype));
    CHECK_TENSOR_NEAR(silu(x), {0.0, 0.0, 100.0, 1000.0}, tolerance_for(dtype));
    Tensor p = x.detach();
    p.set_requires_grad(true);
    sum(silu(p)).backward();
    CHECK_TENSOR_NEAR(p.grad(), {0.0, 0.0, 1.0, 1.0}, tolerance_for(dtype));
    Tensor t = x.detach();
    t.set_requires_grad(true);
    sum(tanh(t)).backward();
    CHECK_TENSOR_NEAR(t.grad(), {0.0, 0.0, 0.0, 0.0}, tolerance_for(dtype));
  }
}

TEST_CASE("tanh and silu gradients (finite differences)") {
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return tanh(in[0]); }, {testing::random_tensor({3, 7}, 14, -3, 3)});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return silu(in[0]); }, {testing::random_tensor({3, 7}, 15, -6, 6)});
  // Through a composition, so that the upstream gradient is not all ones.
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return mul(silu(in[0]), tanh(in[1])); },
                  {testing::random_tensor({2, 5}, 16, -2, 2), testing::random_tensor({2, 5}, 17, -2, 2)});
}
