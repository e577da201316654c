// The reduced-precision GEMMs on CUDA against the CPU: bf16 (tensor cores, f32 accumulation)
// against the CPU's bf16 path, which rounds the same operands and sums in f32; tf32 against the
// CPU's fp32 within TF32's rounding; linear with a bias through cuBLASLt's bias epilogue in every
// precision. Forward and backward. Skipped without a CUDA device.
#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "attnlab/precision.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;

namespace {

const Device kGpu = Device::cuda(0);

// The same products up to the order of f32 sums (cuBLAS may split k).
testing::Tolerance same_products() { return {1e-4, 1e-4}; }
// TF32 rounds every operand to 10 mantissa bits (relative 2^-11); sums of k ~ 100 products of
// values in [-1, 1] differ by a few 1e-3 (up to about 2e-2 at k = 300 in the far tail).
testing::Tolerance tf32_vs_fp32() { return {3e-2, 1e-2}; }

Tensor leaf(const Tensor& host, Device device) {
  Tensor t = host.to(device).detach();
  t.set_requires_grad();
  return t;
}

// matmul forward and backward under `precision` on both devices; the GPU is compared with the
// CPU under `cpu_precision` (bf16 with bf16, tf32 with fp32).
void check_matmul(const Shape& sa, const Shape& sb, bool ta, bool tb, Precision precision, Precision cpu_precision,
                  testing::Tolerance tol, std::uint64_t seed) {
  CAPTURE(sa.str());
  CAPTURE(sb.str());
  CAPTURE(precision_name(precision));
  const Tensor a = random_tensor(sa, seed), b = random_tensor(sb, seed + 1);
  Tensor a_cpu = leaf(a, Device::cpu()), b_cpu = leaf(b, Device::cpu());
  Tensor a_gpu = leaf(a, kGpu), b_gpu = leaf(b, kGpu);
  Tensor y_cpu, y_gpu;
  {
    const PrecisionGuard guard(cpu_precision);
    y_cpu = matmul(a_cpu, b_cpu, ta, tb);
  }
  {
    const PrecisionGuard guard(precision);
    y_gpu = matmul(a_gpu, b_gpu, ta, tb);
  }
  CHECK(y_gpu.dtype() == DType::f32);
  CHECK_TENSOR_NEAR(y_gpu.to(Device::cpu()), y_cpu, tol);
  const Tensor g = random_tensor(y_cpu.shape(), seed + 2);
  {
    const PrecisionGuard guard(cpu_precision);
    y_cpu.backward(g);
  }
  {
    const PrecisionGuard guard(precision);
    y_gpu.backward(g.to(kGpu));
  }
  CHECK(a_gpu.grad().dtype() == DType::f32);
  CHECK_TENSOR_NEAR(a_gpu.grad().to(Device::cpu()), a_cpu.grad(), tol);
  CHECK_TENSOR_NEAR(b_gpu.grad().to(Device::cpu()), b_cpu.grad(), tol);
}

}  // namespace

TEST_CASE("cuda bf16 matmul matches the cpu bf16 path") {
  SKIP_WITHOUT_CUDA();
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    check_matmul(ta ? Shape{67, 33} : Shape{33, 67}, tb ? Shape{45, 67} : Shape{67, 45}, ta, tb, Precision::bf16,
                 Precision::bf16, same_products(), 10 + t);
    // Batched with a shared rank-2 b (the folded and the strided paths, and the summed dB).
    check_matmul(ta ? Shape{3, 2, 8, 5} : Shape{3, 2, 5, 8}, tb ? Shape{6, 8} : Shape{8, 6}, ta, tb, Precision::bf16,
                 Precision::bf16, same_products(), 20 + t);
  }
}

TEST_CASE("cuda tf32 matmul is close to the cpu fp32 product") {
  SKIP_WITHOUT_CUDA();
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    check_matmul(ta ? Shape{2, 100, 33} : Shape{2, 33, 100}, tb ? Shape{2, 45, 100} : Shape{2, 100, 45}, ta, tb,
                 Precision::tf32, Precision::fp32, tf32_vs_fp32(), 30 + t);
  }
}

TEST_CASE("cuda linear with bias through the cublasLt epilogue matches the cpu in every precision") {
  SKIP_WITHOUT_CUDA();
  struct Case {
    Precision gpu, cpu;
    testing::Tolerance tol;
  };
  const Case cases[] = {{Precision::fp32, Precision::fp32, testing::tolerance_for(DType::f32)},
                        {Precision::bf16, Precision::bf16, same_products()},
                        {Precision::tf32, Precision::fp32, tf32_vs_fp32()}};
  // Shapes: odd sizes, a single row, a long inner axis.
  const Shape shapes[][2] = {{{2, 5, 7}, {9, 7}}, {{1, 64}, {33, 64}}, {{37, 300}, {130, 300}}};
  std::uint64_t seed = 40;
  for (const Case& c : cases) {
    for (const auto& sh : shapes) {
      CAPTURE(precision_name(c.gpu));
      CAPTURE(sh[0].str());
      const Tensor x = random_tensor(sh[0], seed++), w = random_tensor(sh[1], seed++);
      const Tensor bias = random_tensor({sh[1][0]}, seed++);
      Tensor x_cpu = leaf(x, Device::cpu()), w_cpu = leaf(w, Device::cpu()), b_cpu = leaf(bias, Device::cpu());
      Tensor x_gpu = leaf(x, kGpu), w_gpu = leaf(w, kGpu), b_gpu = leaf(bias, kGpu);
      Tensor y_cpu, y_gpu;
      {
        const PrecisionGuard guard(c.cpu);
        y_cpu = linear(x_cpu, w_cpu, b_cpu);
      }
      {
        const PrecisionGuard guard(c.gpu);
        y_gpu = linear(x_gpu, w_gpu, b_gpu);
      }
      CHECK_TENSOR_NEAR(y_gpu.to(Device::cpu()), y_cpu, c.tol);
      const Tensor g = random_tensor(y_cpu.shape(), seed++);
      {
        const PrecisionGuard guard(c.cpu);
        y_cpu.backward(g);
      }
      {
        const PrecisionGuard guard(c.gpu);
        y_gpu.backward(g.to(kGpu));
      }
      CHECK_TENSOR_NEAR(x_gpu.grad().to(Device::cpu()), x_cpu.grad(), c.tol);
      CHECK_TENSOR_NEAR(w_gpu.grad().to(Device::cpu()), w_cpu.grad(), c.tol);
      CHECK_TENSOR_NEAR(b_gpu.grad().to(Device::cpu()), b_cpu.grad(), testing::tolerance_for(DType::f32));
    }
  }
}

TEST_CASE("cuda f64 linear with bias keeps the exact path") {
  SKIP_WITHOUT_CUDA();
  const Tensor x = random_tensor({3, 11}, 60, -1, 1, DType::f64), w = random_tensor({5, 11}, 61, -1, 1, DType::f64);
  const Tensor b = random_tensor({5}, 62, -1, 1, DType::f64);
  const PrecisionGuard guard(Precision::bf16);  // ignored for f64
  CHECK_TENSOR_NEAR(linear(x.to(kGpu), w.to(kGpu), b.to(kGpu)).to(Device::cpu()), linear(x, w, b),
                    testing::tolerance_for(DType::f64));
}
