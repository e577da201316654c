// matmul and linear on a CUDA device (cuBLAS) against the CPU kernels, forward and backward,
// under the dtype tolerances. Every test is skipped where no CUDA device is visible.
#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

const Device kGpu = Device::cuda(0);

bool no_device() { return !cuda_built() || cuda_device_count() == 0; }

// A leaf on `device` with the values of `host` (a CPU tensor), wanting gradients.
Tensor leaf(const Tensor& host, Device device) {
  Tensor t = host.to(device).detach();
  t.set_requires_grad();
  return t;
}

// matmul(a, b) and its gradients for the output gradient g, on the CPU and on the GPU.
void check_matmul(const Shape& sa, const Shape& sb, bool ta, bool tb, DType dtype,
                  std::uint64_t seed) {
  CAPTURE(sa.str());
  CAPTURE(sb.str());
  CAPTURE(ta);
  CAPTURE(tb);
  CAPTURE(dtype_name(dtype));
  const Tensor a = random_tensor(sa, seed, -1, 1, dtype);
  const Tensor b = random_tensor(sb, seed + 1, -1, 1, dtype);
  Tensor a_cpu = leaf(a, Device::cpu()), b_cpu = leaf(b, Device::cpu());
  Tensor a_gpu = leaf(a, kGpu), b_gpu = leaf(b, kGpu);
  Tensor y_cpu = matmul(a_cpu, b_cpu, ta, tb);
  Tensor y_gpu = matmul(a_gpu, b_gpu, ta, tb);
  REQUIRE(y_gpu.device() == kGpu);
  REQUIRE(y_gpu.shape() == y_cpu.shape());
  const auto tol = tolerance_for(dtype);
  CHECK_TENSOR_NEAR(y_gpu.to(Device::cpu()), y_cpu, tol);

  const Tensor g = random_tensor(y_cpu.shape(), seed + 2, -1, 1, dtype);
  y_cpu.backward(g);
  y_gpu.backward(g.to(kGpu));
  CHECK_TENSOR_NEAR(a_gpu.grad().to(Device::cpu()), a_cpu.grad(), tol);
  CHECK_TENSOR_NEAR(b_gpu.grad().to(Device::cpu()), b_cpu.grad(), tol);
}

}  // namespace

TEST_CASE("cuda matmul matches the cpu for every transpose combination") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      // op(a) [5, 4], op(b) [4, 6]: unbatched.
      check_matmul(ta ? Shape{4, 5} : Shape{5, 4}, tb ? Shape{6, 4} : Shape{4, 6}, ta, tb, dtype,
                   100 + t);
      // Odd sizes, larger than a tile.
      check_matmul(ta ? Shape{67, 33} : Shape{33, 67}, tb ? Shape{45, 67} : Shape{67, 45}, ta, tb,
                   dtype, 200 + t);
    }
  }
}

TEST_CASE("cuda matmul batched matches the cpu") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      check_matmul(ta ? Shape{2, 3, 4, 5} : Shape{2, 3, 5, 4}, tb ? Shape{2, 3, 6, 4} : Shape{2, 3, 4, 6},
                   ta, tb, dtype, 300 + t);
    }
  }
}

TEST_CASE("cuda matmul with a shared rank-2 b matches the cpu") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // Every transpose combination reaches a different path: the folded batch (no trans_a), the
  // strided batch with a stride-0 operand, and for dB the folded sum or the accumulating loop.
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      check_matmul(ta ? Shape{3, 2, 4, 5} : Shape{3, 2, 5, 4}, tb ? Shape{6, 4} : Shape{4, 6}, ta,
                   tb, dtype, 400 + t);
    }
  }
}

TEST_CASE("cuda matmul with an empty inner extent gives zeros") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  const Tensor a = Tensor::zeros({2, 3, 0}, DType::f32, kGpu);
  const Tensor b = Tensor::zeros({0, 4}, DType::f32, kGpu);
  const Tensor c = Tensor::zeros({2, 3, 4});
  CHECK_TENSOR_NEAR(matmul(a, b).to(Device::cpu()), c, tolerance_for(DType::f32));
}

TEST_CASE("cuda linear with bias matches the cpu forward and backward") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const auto tol = tolerance_for(dtype);
    const Tensor x = random_tensor({2, 5, 7}, 500, -1, 1, dtype);
    const Tensor w = random_tensor({9, 7}, 501, -1, 1, dtype);
    const Tensor bias = random_tensor({9}, 502, -1, 1, dtype);
    Tensor x_cpu = leaf(x, Device::cpu()), w_cpu = leaf(w, Device::cpu());
    Tensor x_gpu = leaf(x, kGpu), w_gpu = leaf(w, kGpu);
    // The bias does not ask for a gradient: its gradient is a sum over rows, and the reduction
    // ops have no CUDA kernels yet.
    Tensor y_cpu = linear(x_cpu, w_cpu, bias);
    Tensor y_gpu = linear(x_gpu, w_gpu, bias.to(kGpu));
    REQUIRE(y_gpu.shape() == Shape{2, 5, 9});
    CHECK_TENSOR_NEAR(y_gpu.to(Device::cpu()), y_cpu, tol);

    const Tensor g = random_tensor(y_cpu.shape(), 503, -1, 1, dtype);
    y_cpu.backward(g);
    y_gpu.backward(g.to(kGpu));
    CHECK_TENSOR_NEAR(x_gpu.grad().to(Device::cpu()), x_cpu.grad(), tol);
    CHECK_TENSOR_NEAR(w_gpu.grad().to(Device::cpu()), w_cpu.grad(), tol);

    // Without a bias: the plain GEMM (beta = 0).
    CHECK_TENSOR_NEAR(linear(x.to(kGpu), w.to(kGpu)).to(Device::cpu()), linear(x, w), tol);
  }
}

TEST_CASE("cuda f32 matmul keeps full f32 precision over a long inner axis") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // The context sets CUBLAS_DEFAULT_MATH: no TF32 for f32. Over k = 4096 TF32's 10-bit mantissa
  // would be off by about 1e-2 here, plain f32 by about 1e-6; the reference is the f64 product.
  const Tensor a = random_tensor({48, 4096}, 600, -1, 1, DType::f64);
  const Tensor b = random_tensor({4096, 40}, 601, -1, 1, DType::f64);
  const Tensor want = matmul(a, b);
  const Tensor got = matmul(a.to(DType::f32).to(kGpu), b.to(DType::f32).to(kGpu));
  CHECK_TENSOR_NEAR(got.to(Device::cpu()).to(DType::f64), want, testing::Tolerance{1e-4, 1e-4});
}

TEST_CASE("cuda linear bias gradient matches the cpu") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // The bias gradient sums the output gradient over every row (sum_rows on the device, in slabs
  // of 64 rows and tiles of 32 columns): one slab and one partial tile; 32 slabs and a full plus
  // a partial tile; more than 65535 * 64 rows, where the slabs grow to fit the grid.
  struct Case {
    std::int64_t rows, in, out;
  };
  for (const Case c : {Case{21, 5, 11}, Case{2000, 3, 37}, Case{65535 * 64 + 1000, 2, 3}}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      // f64 alone for the 4M rows: a serial f32 sum on the CPU would be the less exact side.
      if (dtype == DType::f32 && c.rows > 100000) continue;
      CAPTURE(dtype_name(dtype));
      CAPTURE(c.rows);
      const Tensor x = random_tensor({c.rows, c.in}, 510, -1, 1, dtype);
      const Tensor w = random_tensor({c.out, c.in}, 511, -1, 1, dtype);
      const Tensor bias = random_tensor({c.out}, 512, -1, 1, dtype);
      Tensor b_cpu = leaf(bias, Device::cpu()), b_gpu = leaf(bias, kGpu);
      const Tensor y_cpu = linear(x, w, b_cpu);
      const Tensor y_gpu = linear(x.to(kGpu), w.to(kGpu), b_gpu);
      const Tensor g = random_tensor(y_cpu.shape(), 513, -1, 1, dtype);
      y_cpu.backward(g);
      y_gpu.backward(g.to(kGpu));
      CHECK_TENSOR_NEAR(b_gpu.grad().to(Device::cpu()), b_cpu.grad(), tolerance_for(dtype));
    }
  }
}
