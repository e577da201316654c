// The gradient checker itself must be able to fail: an op with a subtly wrong backward is caught.
#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;

namespace {

// square(x) = x^2 whose backward is off by one percent: 2.02 x instead of 2 x.
class WrongSquareNode final : public Node {
 public:
  explicit WrongSquareNode(const Tensor& x) : x_(x.detach()) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    return {mul(grads[0], scale(x_, 2.02))};
  }
  std::string_view name() const override { return "wrong_square"; }

 private:
  Tensor x_;
};

Tensor wrong_square(const Tensor& x) {
  Tensor y;
  {
    NoGradGuard g;
    y = mul(x, x);
  }
  if (any_requires_grad({&x})) record(std::make_shared<WrongSquareNode>(x), {&x}, y);
  return y;
}

}  // namespace

TEST_CASE("gradcheck catches a wrong backward") {
  Tensor x = testing::random_tensor({3, 4}, 5);
  auto bad = testing::gradcheck([](const std::vector<Tensor>& in) { return wrong_square(in[0]); }, {x});
  CHECK_FALSE(bad.ok);
  CHECK(bad.message.find("analytic") != std::string::npos);
  auto good = testing::gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], in[0]); }, {x});
  CHECK_MESSAGE(good.ok, good.message);
}

TEST_CASE("a backward returning the wrong shape is refused by the engine") {
  class BadShapeNode final : public Node {
   public:
    std::vector<Tensor> backward(std::vector<Tensor>&) override { return {Tensor::zeros({7}, DType::f64)}; }
    std::string_view name() const override { return "bad_shape"; }
  };
  Tensor x = Tensor::full({2}, 1.0, DType::f64);
  x.set_requires_grad();
  Tensor y = Tensor::full({1}, 1.0, DType::f64);
  record(std::make_shared<BadShapeNode>(), {&x}, y);
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("returned a gradient of shape [7] for input 0 of shape [2]"),
                       Error);
}
