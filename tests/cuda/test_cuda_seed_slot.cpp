// Dropout seeds read from a slot in device memory (attnlab/seed_slot.h): writing the slot is an
// upload the host does not wait for, queued in order with the kernels, and the dropout kernels of
// the core (dropout in f32 and bf16, dropout + add + norm in f32) and of flash (its FMA and tensor-core kernels) read it
// when they run, drawing the masks of the CPU reference. Skipped without a CUDA device.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "attnlab/attnlab.h"
#include "flash_attention.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;

namespace {

const Device kGpu = Device::cuda(0);

std::vector<double> host_values(const Tensor& t) { return t.to(Device::cpu()).to(DType::f64).to_vector<double>(); }

}  // namespace

TEST_CASE("cuda seed slot: a write adds no host wait and is ordered with the queued kernels") {
  SKIP_WITHOUT_CUDA();
  SeedSlot slot(kGpu);
  const Tensor x = random_tensor({37, 101}, 9, 0.5, 1.5).to(kGpu);
  const philox::SeedRef ref{5, slot.address()};
  const HostWaits before = host_waits(kGpu);
  slot.write(77);
  const Tensor a = dropout(x, 0.3, ref, 11);  // queued: reads 77 when it runs
  slot.write(78);
  const Tensor b = dropout(x, 0.3, ref, 11);  // reads 78
  const HostWaits waits = host_waits(kGpu) - before;
  CHECK(waits.synchronizations == 0);
  CHECK(waits.downloads == 0);
  const Tensor x_cpu = x.to(Device::cpu());
  CHECK(host_values(a) == host_values(dropout(x_cpu, 0.3, 77, 11)));
  CHECK(host_values(b) == host_values(dropout(x_cpu, 0.3, 78, 11)));
  CHECK(slot.read() == 78);
}

TEST_CASE("cuda dropout and dropout_add_layer_norm read a bound generator's slot: the cpu's masks") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {DType::f32, DType::bf16}) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = random_tensor({29, 64}, 21, 0.5, 1.5).to(dtype);
    Generator gpu_rng(0), cpu_rng(0);
    gpu_rng.bind_seed_slot(std::make_shared<SeedSlot>(kGpu));
    for (std::uint64_t seed : {101u, 202u}) {
      CAPTURE(seed);
      gpu_rng.set_state(seed, 0);
      cpu_rng.set_state(seed, 0);
      Tensor xg = x.to(kGpu).set_requires_grad();
      const Tensor y = dropout(xg, 0.25, gpu_rng);
      y.backward(Tensor::full(y.shape(), 1.0, dtype, kGpu));
      // The reference on the device by value (bf16 has no cpu dropout): the same kernels, the seed as an argument.
      Tensor xr = x.to(kGpu).set_requires_grad();
      const Generator::Draw d = cpu_rng.reserve(static_cast<std::uint64_t>(x.numel()));
      const Tensor want = dropout(xr, 0.25, d.seed, d.offset);
      want.backward(Tensor::full(want.shape(), 1.0, dtype, kGpu));
      CHECK(host_values(y) == host_values(want));
      CHECK(host_values(xg.grad()) == host_values(xr.grad()));
      // dropout + add + norm takes f32 and f64 (the residual stream stays f32 under bf16 precision)
      // and refuses bf16 clearly.
      const DropoutAddLayerNormInputs in{.x = x.to(kGpu), .residual = random_tensor({29, 64}, 22).to(dtype).to(kGpu)};
      if (dtype == DType::bf16) {
        CHECK_THROWS_WITH_AS(dropout_add_layer_norm(in, 0.25, gpu_rng), doctest::Contains("dtype bf16 is not supported"),
                             Error);
        continue;
      }
      const Generator::Draw n = cpu_rng.reserve(static_cast<std::uint64_t>(x.numel()));
      CHECK(host_values(dropout_add_layer_norm(in, 0.25, gpu_rng)) ==
            host_values(dropout_add_layer_norm(in, 0.25, n.seed, n.offset)));
    }
  }
}

TEST_CASE("cuda flash reads the dropout seed from a device slot, forward and backward") {
  SKIP_WITHOUT_CUDA();
  // f32 runs the FMA kernels, bf16 the tensor-core ones.
  for (DType dtype : {DType::f32, DType::bf16}) {
    CAPTURE(dtype_name(dtype));
    const Tensor q0 = random_tensor({2, 4, 70, 64}, 31, -1.0, 1.0).to(dtype).to(kGpu);
    const Tensor k0 = random_tensor({2, 4, 70, 64}, 32, -1.0, 1.0).to(dtype).to(kGpu);
    const Tensor v0 = random_tensor({2, 4, 70, 64}, 33, -1.0, 1.0).to(dtype).to(kGpu);
    const Tensor dout = random_tensor({2, 4, 70, 64}, 34, -1.0, 1.0).to(dtype).to(kGpu);
    SeedSlot slot(kGpu);
    slot.write(41);
    const flash::FlashOptions by_value{.causal = true, .scale = 0.125, .dropout = 0.2, .seed = 41, .offset = 3};
    flash::FlashOptions by_slot = by_value;
    by_slot.seed = 1;
    by_slot.seed_slot = slot.address();
    auto run = [&](const flash::FlashOptions& o) {
      Tensor q = q0.clone().set_requires_grad(), k = k0.clone().set_requires_grad();
      Tensor v = v0.clone().set_requires_grad();
      const Tensor out = flash::flash_attention(q, k, v, o);
      out.backward(dout);
      return std::vector<std::vector<double>>{host_values(out), host_values(q.grad()), host_values(k.grad()),
                                              host_values(v.grad())};
    };
    CHECK(run(by_slot) == run(by_value));
  }
}
