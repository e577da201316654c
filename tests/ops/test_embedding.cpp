#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

using testing::ThreadCountGuard;

TEST_CASE("embedding gathers rows for i32 and i64 ids") {
  Tensor w = Tensor::from_vector<float>({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Tensor ids64 = Tensor::from_vector<std::int64_t>({2, 3}, {3, 0, 2, 2, 1, 3});
  Tensor out = embedding(w, ids64);
  CHECK(out.shape() == Shape{2, 3, 2});
  CHECK_TENSOR_NEAR(out, {30, 31, 0, 1, 20, 21, 20, 21, 10, 11, 30, 31}, tolerance_for(DType::f32));
  Tensor ids32 = Tensor::from_vector<std::int32_t>({3}, {1, 1, 0});
  Tensor out32 = embedding(w.to(DType::f64), ids32);
  CHECK(out32.shape() == Shape{3, 2});
  CHECK(out32.dtype() == DType::f64);
  CHECK_TENSOR_NEAR(out32, {10, 11, 10, 11, 0, 1}, tolerance_for(DType::f64));
}

TEST_CASE("embedding backward accumulates repeated ids") {
  Tensor w = Tensor::zeros({4, 2}, DType::f64);
  w.set_requires_grad(true);
  Tensor ids = Tensor::from_vector<std::int64_t>({5}, {2, 0, 2, 2, 3});
  Tensor g = Tensor::from_vector<double>({5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  embedding(w, ids).backward(g);
  CHECK_TENSOR_NEAR(w.grad(), {3, 4, 0, 0, 13, 16, 9, 10}, tolerance_for(DType::f64));
}

TEST_CASE("embedding names the first bad id its position and V") {
  Tensor w = Tensor::zeros({5, 3});
  CHECK_THROWS_WITH_AS(embedding(w, Tensor::from_vector<std::int64_t>({4}, {0, 4, 5, -1})),
                       doctest::Contains("embedding: id 5 at position 2 is out of range for vocabulary size V = 5"),
                       Error);
  CHECK_THROWS_WITH_AS(embedding(w, Tensor::from_vector<std::int32_t>({2}, {-3, 7})),
                       doctest::Contains("id -3 at position 0"), Error);
  CHECK_THROWS_WITH_AS(embedding(w, Tensor::zeros({2}, DType::f32)), doctest::Contains("ids must be i32 or i64"),
                       Error);
  CHECK_THROWS_WITH_AS(embedding(Tensor::zeros({5}), Tensor::from_vector<std::int64_t>({1}, {0})),
                       doctest::Contains("weight must be [V, D]"), Error);
}

TEST_CASE("embedding weight gradient (finite differences)") {
  Tensor w = random_tensor({5, 3}, 41);
  Tensor ids = Tensor::from_vector<std::int64_t>({2, 4}, {1, 4, 1, 0, 4, 4, 2, 1});  // repeats, row 3 unused
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return embedding(in[0], in[1]); }, {w, ids});
  Tensor ids32 = Tensor::from_vector<std::int32_t>({3}, {0, 0, 2});
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return embedding(in[0], in[1]); }, {w, ids32});
}

TEST_CASE("embedding gradients are identical with 1 and 2 threads") {
  ThreadCountGuard guard;
  const std::int64_t vocab = 50, dim = 64, n = 2000;  // 128000 gradient elements, many repeats
  Tensor w = random_tensor({vocab, dim}, 51);
  Tensor ids = testing::random_ids({n}, 52, vocab);
  Tensor g = random_tensor({n, dim}, 53, -1.0, 1.0);
  REQUIRE(g.numel() > 32768);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor wt = w.clone();
    wt.set_requires_grad(true);
    Tensor out = embedding(wt, ids);
    out.backward(g);
    return std::make_pair(out.to_vector<float>(), wt.grad().to_vector<float>());
  };
  const auto one = run(1);
  const auto two = run(2);
  REQUIRE(num_threads() == 2);
  CHECK(one.first == two.first);
  CHECK(one.second == two.second);
}

TEST_CASE("select_rows gathers rows of any rank in the given order") {
  Tensor x = Tensor::from_vector<float>({3, 2, 2}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  Tensor y = select_rows(x, {2, 0, 2});
  CHECK(y.shape() == Shape({3, 2, 2}));
  CHECK_TENSOR_NEAR(y, {20, 21, 22, 23, 0, 1, 2, 3, 20, 21, 22, 23}, tolerance_for(DType::f32));
  CHECK_THROWS_WITH_AS(select_rows(x, {3}), doctest::Contains("3"), Error);
  CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return select_rows(in[0], {1, 1, 0}); },
                  {random_tensor({2, 3}, 9)});
}
