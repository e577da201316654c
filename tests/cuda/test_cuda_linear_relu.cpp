// linear_relu on a CUDA device against the CPU, forward and the three gradients, under fp32,
// tf32 and bf16 precision: shapes for the cuBLASLt RELU_BIAS epilogue and the fallbacks (no bias:
// RELU epilogue; f64: always gemm_bias + the relu kernel; odd extents, where cuBLASLt may have no
// algorithm), and enough rows for several slabs of the bias-gradient kernel. Also: the embedding
// backward's scratch buffers come from the caching allocator. Skipped without a CUDA device.
#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/attnlab.h"
#include "attnlab/allocator.h"
#include "attnlab/precision.h"
#include "memory/caching_allocator.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;

namespace {

const Device kGpu = Device::cuda(0);

// Values on a grid of 1/8 in [-1, 1]: exact in bf16 and TF32, and every product and sum of the
// forward (k <= 128: sums below 2^7 in steps of 2^-6) exact in f32. So the pre-activations, the
// exact zeros among them (there are many) and with them the ReLU masks are the same on both
// devices in every precision, and only the backward products (of a continuous dy) round.
Tensor grid_tensor(const Shape& shape, std::uint64_t seed, DType dtype) {
  std::vector<double> v = random_tensor(shape, seed, -1, 1, DType::f64).to_vector<double>();
  for (double& e : v) e = std::round(e * 8) / 8;
  return Tensor::from_vector<double>(shape, v).to(dtype);
}

Tensor leaf(const Tensor& host, Device device) {
  Tensor t = host.to(device).detach();
  t.set_requires_grad();
  return t;
}

struct Case {
  Shape x, w;
  bool bias;
  DType dtype;
};

// linear_relu forward and backward under `precision` on both devices; the CPU runs `cpu_precision`
// (bf16 with bf16, tf32 with fp32).
void check_linear_relu(const Case& c, Precision precision, Precision cpu_precision, testing::Tolerance tol,
                       std::uint64_t seed) {
  CAPTURE(c.x.str());
  CAPTURE(c.w.str());
  CAPTURE(c.bias);
  CAPTURE(dtype_name(c.dtype));
  CAPTURE(precision_name(precision));
  const Tensor x = grid_tensor(c.x, seed, c.dtype), w = grid_tensor(c.w, seed + 1, c.dtype);
  const Tensor b = c.bias ? grid_tensor({c.w[0]}, seed + 2, c.dtype) : Tensor();
  Tensor x_cpu = leaf(x, Device::cpu()), w_cpu = leaf(w, Device::cpu());
  Tensor x_gpu = leaf(x, kGpu), w_gpu = leaf(w, kGpu);
  Tensor b_cpu = c.bias ? leaf(b, Device::cpu()) : Tensor(), b_gpu = c.bias ? leaf(b, kGpu) : Tensor();
  Tensor y_cpu, y_gpu;
  {
    const PrecisionGuard guard(cpu_precision);
    y_cpu = linear_relu(x_cpu, w_cpu, b_cpu);
  }
  {
    const PrecisionGuard guard(precision);
    y_gpu = linear_relu(x_gpu, w_gpu, b_gpu);
  }
  REQUIRE(y_gpu.shape() == y_cpu.shape());
  CHECK(y_gpu.dtype() == y_cpu.dtype());
  // Exact pre-activations: the forward is the same to the bit.
  CHECK_TENSOR_NEAR(y_gpu.to(Device::cpu()), y_cpu, testing::Tolerance{0.0, 0.0});
  const Tensor g = random_tensor(y_cpu.shape(), seed + 3, -1, 1, y_cpu.dtype());
  {
    const PrecisionGuard guard(cpu_precision);
    y_cpu.backward(g);
  }
  {
    const PrecisionGuard guard(precision);
    y_gpu.backward(g.to(kGpu));
  }
  CHECK_TENSOR_NEAR(x_gpu.grad().to(Device::cpu()), x_cpu.grad(), tol);
  CHECK_TENSOR_NEAR(w_gpu.grad().to(Device::cpu()), w_cpu.grad(), tol);
  if (c.bias) CHECK_TENSOR_NEAR(b_gpu.grad().to(Device::cpu()), b_cpu.grad(), tol);
}

const std::vector<Case>& f32_cases() {
  static const std::vector<Case> cases = {
      {{64, 128}, {256, 128}, true, DType::f32},   // aligned: the RELU_BIAS epilogue
      {{64, 128}, {256, 128}, false, DType::f32},  // the RELU epilogue
      {{3, 5, 7}, {9, 7}, true, DType::f32},       // odd extents and addresses: epilogue or fallback
      {{300, 24}, {40, 24}, true, DType::f32},     // 5 slabs of rows, a partial column tile
  };
  return cases;
}

}  // namespace

TEST_CASE("cuda linear_relu matches the cpu in fp32") {
  SKIP_WITHOUT_CUDA();
  std::uint64_t seed = 10;
  for (const Case& c : f32_cases())
    check_linear_relu(c, Precision::fp32, Precision::fp32, testing::Tolerance{1e-4, 1e-4}, seed += 10);
}

TEST_CASE("cuda linear_relu matches the cpu in f64 through the fallback") {
  SKIP_WITHOUT_CUDA();
  // f64 never takes cuBLASLt: gemm_bias (or gemm), then the relu kernel in place.
  check_linear_relu({{64, 128}, {256, 128}, true, DType::f64}, Precision::fp32, Precision::fp32,
                    testing::tolerance_for(DType::f64), 200);
  check_linear_relu({{3, 5, 7}, {9, 7}, false, DType::f64}, Precision::fp32, Precision::fp32,
                    testing::tolerance_for(DType::f64), 210);
}

TEST_CASE("cuda linear_relu under tf32 is close to the cpu fp32 gradients") {
  SKIP_WITHOUT_CUDA();
  // The forward is exact (grid values); the backward GEMMs round dz to TF32.
  std::uint64_t seed = 300;
  for (const Case& c : f32_cases())
    check_linear_relu(c, Precision::tf32, Precision::fp32, testing::Tolerance{3e-2, 1e-2}, seed += 10);
}

TEST_CASE("cuda linear_relu under bf16 matches the cpu bf16 path") {
  SKIP_WITHOUT_CUDA();
  // Both devices round dz to bf16 for the backward products and sum in f32.
  std::uint64_t seed = 400;
  for (const Case& c : f32_cases())
    check_linear_relu(c, Precision::bf16, Precision::bf16, testing::Tolerance{1e-4, 1e-4}, seed += 10);
}

TEST_CASE("cuda linear_relu with no rows gives a zero bias gradient") {
  SKIP_WITHOUT_CUDA();
  Tensor b = leaf(Tensor::from_vector<double>({3}, {1, 2, 3}).to(DType::f32), kGpu);
  const Tensor y = linear_relu(Tensor::zeros({0, 2}, DType::f32, kGpu), Tensor::zeros({3, 2}, DType::f32, kGpu), b);
  y.backward(Tensor::zeros({0, 3}, DType::f32, kGpu));
  CHECK_TENSOR_NEAR(b.grad().to(Device::cpu()), {0, 0, 0}, testing::Tolerance{0.0, 0.0});
}

TEST_CASE("cuda embedding backward takes its scratch from the caching allocator") {
  SKIP_WITHOUT_CUDA();
  if (caching_disabled_by_env()) {
    MESSAGE("ATTNLAB_NO_CACHING_ALLOCATOR is set: nothing is cached, skipped");
    return;
  }
  const Tensor ids = testing::random_ids({8, 16}, 7, 50).to(kGpu);
  const Tensor dy = random_tensor({8, 16, 32}, 8).to(kGpu);
  auto step = [&] {
    Tensor w = random_tensor({50, 32}, 9).to(kGpu).detach();
    w.set_requires_grad();
    embedding(w, ids).backward(dy);
    return w.grad().to(Device::cpu());
  };
  const Tensor first = step();  // fills the cache with every block a step needs
  const AllocatorStats before = memory_stats(kGpu);
  const Tensor second = step();
  const AllocatorStats after = memory_stats(kGpu);
  CHECK(after.raw_allocations == before.raw_allocations);
  CHECK(after.cache_hits > before.cache_hits);
  CHECK_TENSOR_NEAR(second, first, testing::Tolerance{0.0, 0.0});
}
