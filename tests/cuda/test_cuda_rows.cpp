// Parity of the CUDA kernels of softmax, log_softmax, layer_norm, cross_entropy, sum/mean,
// permute, split and concat with the CPU reference, forward and backward, under the dtype
// tolerance table. Skipped without a CUDA device.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

#define SKIP_WITHOUT_CUDA()                          \
  if (attnlab::cuda_device_count() == 0) {           \
    MESSAGE("no CUDA device: skipped");              \
    return;                                          \
  }

const DType kDTypes[] = {DType::f32, DType::f64};

// The same values as a CPU leaf and a CUDA leaf, both requiring gradients.
struct Leaves {
  Tensor cpu, gpu;
};
Leaves leaves(const Shape& shape, std::uint64_t seed, DType dtype, double lo = -2.0, double hi = 2.0) {
  Tensor c = random_tensor(shape, seed, lo, hi, dtype);
  Tensor g = c.to(Device::cuda());
  c.set_requires_grad();
  g.set_requires_grad();
  return {c, g};
}

void check_near(const Tensor& gpu, const Tensor& cpu, DType dtype) {
  CHECK_TENSOR_NEAR(gpu.to(Device::cpu()), cpu, tolerance_for(dtype));
}

// Runs backward on both with the same random output gradient and compares the leaf gradients.
void check_backward(const Tensor& y_cpu, const Tensor& y_gpu, const Leaves& x, DType dtype, std::uint64_t seed) {
  const Tensor dy = random_tensor(y_cpu.shape(), seed, -1.0, 1.0, dtype);
  y_cpu.backward(dy);
  y_gpu.backward(dy.to(Device::cuda()));
  check_near(x.gpu.grad(), x.cpu.grad(), dtype);
}

// Additive mask [B, 1, Tq, Tk] with -inf at some keys and one fully masked query row.
Tensor make_mask(std::int64_t b, std::int64_t tq, std::int64_t tk, DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> m(static_cast<std::size_t>(b * tq * tk), 0.0);
  for (std::int64_t i = 0; i < b * tq; ++i)
    for (std::int64_t j = 0; j < tk; ++j) {
      const bool masked = (i % tq == 1) || ((i + j) % 3 == 0);  // row 1 of every batch fully masked
      m[static_cast<std::size_t>(i * tk + j)] = masked ? -inf : 0.0;
    }
  return Tensor::from_vector(Shape{b, 1, tq, tk}, m).to(dtype);
}

}  // namespace

TEST_CASE("cuda softmax and log_softmax match the cpu with masks and causal rows") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    for (bool log : {false, true}) {
      for (int variant = 0; variant < 4; ++variant) {  // plain, mask, causal, mask + causal
        INFO("dtype ", dtype_name(dtype), " log ", log, " variant ", variant);
        const bool use_mask = variant == 1 || variant == 3;
        const bool causal = variant >= 2;
        const Leaves x = leaves(Shape{2, 3, 5, 300}, 11 + static_cast<std::uint64_t>(variant), dtype);
        const Tensor mask_cpu = use_mask ? make_mask(2, 5, 300, dtype) : Tensor();
        const Tensor mask_gpu = use_mask ? mask_cpu.to(Device::cuda()) : Tensor();
        const Tensor y_cpu = log ? log_softmax(x.cpu, mask_cpu, causal) : softmax(x.cpu, mask_cpu, causal);
        const Tensor y_gpu = log ? log_softmax(x.gpu, mask_gpu, causal) : softmax(x.gpu, mask_gpu, causal);
        check_near(y_gpu, y_cpu, dtype);
        check_backward(y_cpu, y_gpu, x, dtype, 99);
      }
    }
  }
}

TEST_CASE("cuda softmax of a causal square with more keys than queries matches the cpu") {
  SKIP_WITHOUT_CUDA();
  const Leaves x = leaves(Shape{4, 7}, 5, DType::f32);
  const Tensor y_cpu = softmax(x.cpu, Tensor(), true);
  const Tensor y_gpu = softmax(x.gpu, Tensor(), true);
  check_near(y_gpu, y_cpu, DType::f32);
  check_backward(y_cpu, y_gpu, x, DType::f32, 6);
}

TEST_CASE("cuda layer_norm forward and backward match the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    for (std::int64_t rows : {3, 600}) {  // 600 rows: more than one chunk of the dgamma reduction
      INFO("dtype ", dtype_name(dtype), " rows ", rows);
      const Leaves x = leaves(Shape{rows, 96}, 21, dtype);
      const Leaves gamma = leaves(Shape{96}, 22, dtype, 0.5, 1.5);
      const Leaves beta = leaves(Shape{96}, 23, dtype);
      const Tensor y_cpu = layer_norm(x.cpu, gamma.cpu, beta.cpu, 1e-5);
      const Tensor y_gpu = layer_norm(x.gpu, gamma.gpu, beta.gpu, 1e-5);
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 24);
      check_near(gamma.gpu.grad(), gamma.cpu.grad(), dtype);
      check_near(beta.gpu.grad(), beta.cpu.grad(), dtype);
    }
  }
}

TEST_CASE("cuda cross_entropy with label smoothing and ignored targets matches the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    for (DType index : {DType::i32, DType::i64}) {
      INFO("dtype ", dtype_name(dtype), " targets ", dtype_name(index));
      const Leaves logits = leaves(Shape{9, 1000}, 31, dtype, -4.0, 4.0);
      std::vector<std::int64_t> t = {3, -100, 999, 0, 17, -100, 500, 42, 7};
      const Tensor targets_cpu = Tensor::from_vector(Shape{9}, t).to(index);
      const Tensor targets_gpu = targets_cpu.to(Device::cuda());
      const CrossEntropyResult r_cpu = cross_entropy(logits.cpu, targets_cpu, 0.1, -100);
      const CrossEntropyResult r_gpu = cross_entropy(logits.gpu, targets_gpu, 0.1, -100);
      CHECK(r_gpu.tokens == r_cpu.tokens);
      check_near(r_gpu.loss_sum, r_cpu.loss_sum, dtype);
      r_cpu.loss_sum.backward();
      r_gpu.loss_sum.backward();
      check_near(logits.gpu.grad(), logits.cpu.grad(), dtype);
    }
  }
}

TEST_CASE("cuda sum and mean full and per axis match the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    INFO("dtype ", dtype_name(dtype));
    {
      const Leaves x = leaves(Shape{50000}, 41, dtype);  // several chunks of the full reduction
      const Tensor y_cpu = sum(x.cpu);
      const Tensor y_gpu = sum(x.gpu);
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 42);
    }
    for (int axis : {0, 1, 2}) {
      INFO("axis ", axis);
      const Leaves x = leaves(Shape{4, 33, 17}, 43 + static_cast<std::uint64_t>(axis), dtype);
      const Tensor y_cpu = mean(x.cpu, axis, axis == 1);
      const Tensor y_gpu = mean(x.gpu, axis, axis == 1);
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 47);
    }
  }
}

TEST_CASE("cuda permute split and concat match the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    INFO("dtype ", dtype_name(dtype));
    {
      const Leaves x = leaves(Shape{2, 5, 3, 4}, 51, dtype);
      const Tensor y_cpu = permute(x.cpu, {0, 2, 1, 3});
      const Tensor y_gpu = permute(x.gpu, {0, 2, 1, 3});
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 52);
    }
    {
      const Leaves x = leaves(Shape{3, 4, 5}, 53, dtype);
      const Tensor y_cpu = permute(x.cpu, {2, 0, 1});
      const Tensor y_gpu = permute(x.gpu, {2, 0, 1});
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 54);
    }
    {
      const Leaves x = leaves(Shape{3, 10, 4}, 55, dtype);
      const std::vector<Tensor> p_cpu = split(x.cpu, 1, {2, 0, 5, 3});
      const std::vector<Tensor> p_gpu = split(x.gpu, 1, {2, 0, 5, 3});
      REQUIRE(p_cpu.size() == p_gpu.size());
      for (std::size_t i = 0; i < p_cpu.size(); ++i) check_near(p_gpu[i], p_cpu[i], dtype);
      // concat of the pieces in another order, then backward through concat and split.
      const Tensor y_cpu = concat({p_cpu[2], p_cpu[0], p_cpu[3], p_cpu[1]}, 1);
      const Tensor y_gpu = concat({p_gpu[2], p_gpu[0], p_gpu[3], p_gpu[1]}, 1);
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 56);
    }
  }
}
