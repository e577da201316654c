// Gradient clipping on CUDA without a host wait: gradient_clip's kernel against the CPU op bit for
// bit, a norm that is not finite reported at the next wait, and Adam reading clipping's factor on
// the device (AdamHyper::grad_scale_tensor) as if it were the number. Skipped without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;

namespace {

const Device kGpu = Device::cuda(0);

Tensor squares_on(double s, const Device& device) { return Tensor::full(Shape{}, s, DType::f64, device); }

}  // namespace

TEST_CASE("cuda gradient_clip gives the cpu's norm and factor to the bit, without a wait") {
  SKIP_WITHOUT_CUDA();
  for (double squares : {25.0, 2.0, 0.0, 4.0, 1e-30, 1e300, 0.123456789}) {
    for (double max_norm : {0.5, 2.0, 1e3}) {
      CAPTURE(squares);
      CAPTURE(max_norm);
      const Tensor on_gpu = squares_on(squares, kGpu);
      const HostWaits before = host_waits(kGpu);
      const GradientClip gpu = gradient_clip(on_gpu, max_norm);
      const HostWaits during = host_waits(kGpu) - before;
      CHECK(during.synchronizations == 0);
      CHECK(during.downloads == 0);
      CHECK(gpu.norm.device() == kGpu);
      const GradientClip cpu = gradient_clip(squares_on(squares, Device::cpu()), max_norm);
      CHECK(gpu.norm.item() == cpu.norm.item());
      CHECK(gpu.factor.item() == cpu.factor.item());
    }
  }
}

TEST_CASE("cuda gradient_clip reports a norm that is not finite at the next wait, once") {
  SKIP_WITHOUT_CUDA();
  for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(bad);
    const HostWaits before = host_waits(kGpu);
    const GradientClip c = gradient_clip(squares_on(bad, kGpu), 1.0);  // queued: nothing thrown yet
    CHECK((host_waits(kGpu) - before).synchronizations == 0);
    CHECK_THROWS_WITH_AS(synchronize(kGpu),
                         doctest::Contains("gradient_clip: the gradients' L2 norm is not finite (inf or NaN)"), Error);
    CHECK(std::isnan(c.factor.item()));  // reported once; the factor is NaN
  }
}

TEST_CASE("cuda adam_step_multi with grad_scale_tensor equals the scale as a number, to the bit") {
  SKIP_WITHOUT_CUDA();
  const double factor = 0.3713;
  for (DType dtype : {DType::f32, DType::bf16}) {
    CAPTURE(dtype_name(dtype));
    std::vector<Tensor> p[2], g, m[2], v[2];
    for (int k = 0; k < 3; ++k) {
      const Shape shape = k == 0 ? Shape{70001} : Shape{3, 5 + k};
      const auto seed = static_cast<std::uint64_t>(10 * k);
      const Tensor p0 = testing::random_tensor(shape, seed, -1.0, 1.0, dtype).to(kGpu);
      g.push_back(testing::random_tensor(shape, seed + 1, -1.0, 1.0, dtype).to(kGpu));
      for (int side = 0; side < 2; ++side) {
        p[side].push_back(p0.clone());
        m[side].push_back(Tensor::zeros(shape, dtype, kGpu));
        v[side].push_back(Tensor::zeros(shape, dtype, kGpu));
      }
    }
    const Tensor scale_tensor = squares_on(factor, kGpu);
    for (std::int64_t t = 1; t <= 3; ++t) {
      adam_step_multi(p[0], g, m[0], v[0], {.lr = 1e-2, .step = t, .grad_scale = 2.0 * factor});
      const HostWaits before = host_waits(kGpu);
      adam_step_multi(p[1], g, m[1], v[1],
                      {.lr = 1e-2, .step = t, .grad_scale = 2.0, .grad_scale_tensor = scale_tensor});
      CHECK((host_waits(kGpu) - before).synchronizations == 0);
    }
    for (std::size_t k = 0; k < p[0].size(); ++k) {
      CAPTURE(k);
      CHECK(p[1][k].to(Device::cpu()).to_vector<double>() == p[0][k].to(Device::cpu()).to_vector<double>());
      CHECK(v[1][k].to(Device::cpu()).to_vector<double>() == v[0][k].to(Device::cpu()).to_vector<double>());
    }
  }
}
