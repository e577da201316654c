#include "attnlab/device.h"

#include <charconv>
#include <fstream>
#include <thread>

#include "attnlab/build_info.h"
#include "attnlab/error.h"
#include "attnlab/name_table.h"
#include "cuda/launch.h"
#include "cuda/runtime.h"
#include "device/cuda_architectures.h"
#include "dispatch.h"
#include "memory/memory_limit.h"

namespace attnlab {

namespace {
constexpr auto kDeviceKinds = name_table<DeviceKind>("device kind", {{DeviceKind::cpu, "cpu"}, {DeviceKind::cuda, "cuda"}});
}  // namespace

std::string_view device_kind_name(DeviceKind kind) { return kDeviceKinds.name(kind); }

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    auto digits = text.substr(5);
    int index = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0) return cuda(index);
  }
  throw Error(fmt::format("invalid device '{}' (expected cpu, cuda or cuda:N)", text));
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", index);
}

bool cuda_built() { return ATTNLAB_CUDA_BUILT; }

int cuda_device_count() {
  if (!cuda_built()) return 0;
  ATTNLAB_CUDA_ONLY("cuda_device_count", return cuda::device_count());
}

std::string available_devices() {
  std::string out = "cpu";
  for (int i = 0; i < cuda_device_count(); ++i) out += fmt::format(", cuda:{}", i);
  return out;
}

std::string describe_device(Device device) {
  check_device_available(device);
  if (device.is_cuda()) {
    std::string text;
    ATTNLAB_CUDA_ONLY("describe_device", text = cuda::describe(device.index));
    return text;
  }
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return fmt::format("{}, {} threads", model, std::thread::hardware_concurrency());
}

void check_device_available(Device device) {
  if (device.is_cpu()) return;
  if (!cuda_built())
    throw DeviceError(fmt::format("device {} is not available: attnlab was built without CUDA (reconfigure with "
                                  "-DATTNLAB_CUDA=ON on a machine with nvcc); available: cpu",
                                  device.str()));
  std::string why;
  int count = 0;
  ATTNLAB_CUDA_ONLY("check_device_available", count = cuda::device_count(&why));
  if (count == 0)
    throw DeviceError(fmt::format("device {} is not available: this build has CUDA, but no CUDA device is visible "
                                  "({}; check the driver, nvidia-smi and CUDA_VISIBLE_DEVICES); available: cpu",
                                  device.str(), why));
  if (device.index >= count)
    throw DeviceError(fmt::format("device {} is not available: {} CUDA device(s) are visible; available: {}",
                                  device.str(), count, available_devices()));
  // A GPU the kernels were not compiled for would fail at the first launch ("no kernel image").
  int major = 0, minor = 0;
  std::string name;
  ATTNLAB_CUDA_ONLY("check_device_available", cuda::compute_capability(device.index, major, minor, name));
  const std::string refusal = cuda_build_refusal(ATTNLAB_CUDA_ARCHITECTURES, major, minor);
  if (!refusal.empty())
    throw DeviceError(fmt::format("device {} ({}) is not available: {}; available: {}", device.str(), name, refusal,
                                  available_devices()));
  cuda_memory_limit_from_env();  // a malformed limit is refused now, before any work
}

std::string cuda_architectures() { return cuda_architectures_text(ATTNLAB_CUDA_ARCHITECTURES); }

void synchronize(Device device) {
  if (device.is_cpu()) return;
  ATTNLAB_CUDA_ONLY("synchronize", cuda::synchronize(device.index));
}

HostWaits host_waits(Device device) {
  HostWaits waits;
  if (device.is_cpu()) return waits;
  ATTNLAB_CUDA_ONLY("host_waits", cuda::host_waits(device.index, waits.synchronizations, waits.downloads));
  return waits;
}

CUstream_st* cuda_stream(Device device) {
  ATTNLAB_CHECK(device.is_cuda(), "cuda_stream: {} is not a CUDA device", device.str());
  ATTNLAB_CUDA_ONLY("cuda_stream", return cuda::current_stream(device.index));
}

}  // namespace attnlab
