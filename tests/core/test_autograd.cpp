#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "support/tensor_testing.h"

using namespace attnlab;

TEST_CASE("gradients accumulate into leaves across uses and passes") {
  Tensor x = Tensor::from_vector<double>({2}, {1.0, 2.0});
  x.set_requires_grad();
  // y = x * x + x uses x three times: dy/dx = 2x + 1.
  Tensor y = add(mul(x, x), x);
  y.backward(Tensor::full({2}, 1.0, DType::f64));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3.0, 5.0});
  // A second graph adds to the same grad.
  Tensor z = scale(x, 3.0);
  z.backward(Tensor::full({2}, 1.0, DType::f64));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{6.0, 8.0});
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("no-grad scope records nothing") {
  Tensor x = Tensor::full({3}, 1.0);
  x.set_requires_grad();
  {
    NoGradGuard guard;
    CHECK_FALSE(grad_enabled());
    Tensor y = scale(x, 2.0);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  CHECK(grad_enabled());
  CHECK(scale(x, 2.0).requires_grad());
}

TEST_CASE("backward errors are clear") {
  Tensor x = Tensor::full({3}, 1.0);
  CHECK_THROWS_WITH_AS(x.backward(), doctest::Contains("scalar"), Error);
  Tensor s = Tensor::full({1}, 1.0);
  CHECK_THROWS_WITH_AS(s.backward(), doctest::Contains("does not require grad"), Error);
  Tensor p = Tensor::full({1}, 2.0);
  p.set_requires_grad();
  Tensor y = mul(p, p);
  y.backward();
  CHECK(y.grad_fn()->released);
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("already differentiated"), Error);
  CHECK_THROWS_WITH_AS(Tensor::zeros({2}, DType::i32).set_requires_grad(),
                       doctest::Contains("only floating tensors"), Error);
}

TEST_CASE("backward frees saved tensors as it goes") {
  Allocator& cpu = allocator_for(Device::cpu());
  Tensor w = testing::random_tensor({256, 256}, 1, -1, 1, DType::f64);
  w.set_requires_grad();
  const auto base = cpu.bytes_in_use();
  Tensor h = w;
  for (int i = 0; i < 8; ++i) h = mul(h, w);  // each mul saves both factors
  const auto peak_graph = cpu.bytes_in_use() - base;
  h.backward(Tensor::full(h.shape(), 1.0, DType::f64));
  // Once backward has run, the saved factors are gone: only h, w.grad and the seed remain.
  const auto after = cpu.bytes_in_use() - base;
  CHECK(after < peak_graph);
  CHECK(after <= 3 * w.nbytes());
}
