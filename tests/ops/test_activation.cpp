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
