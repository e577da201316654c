// The host-wait counters of a CUDA device (host_waits in attnlab/device.h): what they count is
// what a training step must avoid, so each kind of operation is checked against them. Kernels and
// copies within the device and uploads add nothing; a download adds one download and one
// synchronisation; an explicit synchronize() adds one synchronisation. Skipped without a CUDA
// device.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/cuda_testing.h"

using namespace attnlab;

namespace {

const Device kGpu = Device::cuda(0);

}  // namespace

TEST_CASE("cuda host-wait counters: kernels add nothing, each download and wait adds one") {
  SKIP_WITHOUT_CUDA();
  Tensor x = Tensor::full({4096}, 1.5, DType::f32, kGpu);
  HostWaits before = host_waits(kGpu);
  Tensor y = add(scale(x, 2.0), x);  // kernels, queued only
  Tensor z = sum(y.clone());          // a copy within the device, a reduction
  const HostWaits after_kernels = host_waits(kGpu) - before;
  CHECK(after_kernels.synchronizations == 0);
  CHECK(after_kernels.downloads == 0);

  before = host_waits(kGpu);
  CHECK(z.item() == doctest::Approx(4096 * 4.5));  // one download, one wait behind it
  const HostWaits after_item = host_waits(kGpu) - before;
  CHECK(after_item.downloads == 1);
  CHECK(after_item.synchronizations == 1);

  before = host_waits(kGpu);
  std::vector<float> host(1 << 16, 2.0f);
  Tensor up = Tensor::from_vector<float>({1 << 16}, host).to(kGpu);  // an upload does not wait
  const HostWaits after_upload = host_waits(kGpu) - before;
  CHECK(after_upload.synchronizations == 0);
  CHECK(after_upload.downloads == 0);
  std::fill(host.begin(), host.end(), -1.0f);  // the upload took its own copy
  CHECK(up.to_vector<float>() == std::vector<float>(1 << 16, 2.0f));

  before = host_waits(kGpu);
  synchronize(kGpu);
  const HostWaits after_wait = host_waits(kGpu) - before;
  CHECK(after_wait.downloads == 0);
  CHECK(after_wait.synchronizations == 1);
}
