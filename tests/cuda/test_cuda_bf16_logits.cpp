// bf16 logits on CUDA against the CPU: matmul's bf16_out (cuBLAS writing bf16) and cross_entropy
// reading bf16 logits with a bf16 gradient. The two devices sum in other orders, so a value may
// round to the neighbouring bf16: compared within bf16's relative step (2^-8). Skipped without a
// CUDA device.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/precision.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;

namespace {

const Device kGpu = Device::cuda(0);
// One bf16 step either way, relative (and a little absolute room near zero).
const testing::Tolerance kOneStep{1e-6, 1.0 / 128};
// Products of the same bf16 factors summed in f32 in another order.
const testing::Tolerance kSameProducts{1e-4, 1e-4};

Tensor leaf(const Tensor& host, Device device) {
  Tensor t = host.to(device).detach();
  t.set_requires_grad();
  return t;
}

}  // namespace

TEST_CASE("cuda matmul with bf16_out matches the cpu, forward and backward") {
  SKIP_WITHOUT_CUDA();
  const PrecisionGuard guard(Precision::bf16);
  const Tensor h = random_tensor({70, 48}, 1), e = random_tensor({333, 48}, 2, -3, 3);
  Tensor h_cpu = leaf(h, Device::cpu()), e_cpu = leaf(e, Device::cpu());
  Tensor h_gpu = leaf(h, kGpu), e_gpu = leaf(e, kGpu);
  const Tensor y_cpu = matmul(h_cpu, e_cpu, false, true, true);
  const Tensor y_gpu = matmul(h_gpu, e_gpu, false, true, true);
  REQUIRE(y_gpu.dtype() == DType::bf16);
  CHECK_TENSOR_NEAR(y_gpu.to(Device::cpu()).to(DType::f32), y_cpu.to(DType::f32), kOneStep);
  const Tensor g = random_tensor(y_cpu.shape(), 3).to(DType::bf16);
  y_cpu.backward(g);
  y_gpu.backward(g.to(kGpu));
  CHECK(h_gpu.grad().dtype() == DType::f32);
  CHECK_TENSOR_NEAR(h_gpu.grad().to(Device::cpu()), h_cpu.grad(), kSameProducts);
  CHECK_TENSOR_NEAR(e_gpu.grad().to(Device::cpu()), e_cpu.grad(), kSameProducts);
}

TEST_CASE("cuda cross_entropy of bf16 logits matches the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType index : {DType::i32, DType::i64}) {
    for (double eps : {0.0, 0.1}) {
      INFO("targets ", dtype_name(index), " eps ", eps);
      const Tensor x = random_tensor({9, 1000}, 4, -6, 6).to(DType::bf16);
      Tensor x_cpu = leaf(x, Device::cpu()), x_gpu = leaf(x, kGpu);
      const std::vector<std::int64_t> t = {3, -100, 999, 0, 17, -100, 500, 42, 7};
      const Tensor targets = Tensor::from_vector(Shape{9}, t).to(index);
      const CrossEntropyResult r_cpu = cross_entropy(x_cpu, targets, eps, -100);
      const CrossEntropyResult r_gpu = cross_entropy(x_gpu, targets.to(kGpu), eps, -100);
      REQUIRE(r_gpu.loss_sum.dtype() == DType::f32);
      CHECK(r_gpu.tokens.item() == r_cpu.tokens.item());
      CHECK_TENSOR_NEAR(r_gpu.loss_sum.to(Device::cpu()), r_cpu.loss_sum, testing::tolerance_for(DType::f32));
      r_cpu.loss_sum.backward();
      r_gpu.loss_sum.backward();
      REQUIRE(x_gpu.grad().dtype() == DType::bf16);
      CHECK_TENSOR_NEAR(x_gpu.grad().to(Device::cpu()).to(DType::f32), x_cpu.grad().to(DType::f32), kOneStep);
    }
  }
}
