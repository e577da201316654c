#pragma once
// Where a tensor's storage lives: the host, or one CUDA device.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

struct CUstream_st;  // cudaStream_t = CUstream_st*

namespace attnlab {

enum class DeviceKind : std::uint8_t { cpu, cuda };
// "cpu", "cuda" (the name table is in device.cpp: CUDA sources include this header).
std::string_view device_kind_name(DeviceKind kind);

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }
  // Parses "cpu", "cuda", "cuda:N"; throws an Error naming the text otherwise.
  static Device parse(std::string_view text);

  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  std::string str() const;  // "cpu" or "cuda:N"
  friend bool operator==(const Device&, const Device&) = default;
};

// True when this build has the CUDA backend compiled in.
bool cuda_built();
// Number of visible CUDA devices; 0 on a build without CUDA or a machine without a GPU.
int cuda_device_count();
// The devices this process can use, e.g. "cpu" or "cpu, cuda:0, cuda:1".
std::string available_devices();
// What `device` is, for records of where a run ran: the CPU's model name and its hardware
// threads ("AMD EPYC 9R14, 2 threads"), or the GPU's name, memory, compute capability and the
// driver's CUDA version ("NVIDIA H200, 139.8 GiB, sm_90, driver CUDA 12.8"). Throws DeviceError
// as check_device_available does.
std::string describe_device(Device device);
// Throws DeviceError unless `device` can be used here: the CPU always; cuda:N when this build has
// the CUDA backend, more than N devices are visible and the build's kernels were compiled for
// that GPU's compute capability (cuda_architectures()). The message names the device, why it is
// unavailable and what is available. Programs call it before any other work.
void check_device_available(Device device);
// The GPU architectures this build's kernels were compiled for (CMAKE_CUDA_ARCHITECTURES), as
// people read them: "sm_80, sm_90, compute_90" (device code for sm_80 and sm_90, PTX for newer
// GPUs); empty without CUDA.
std::string cuda_architectures();
// Blocks until the work queued on `device` is done (a no-op for the CPU, whose ops return when
// their work is done). Timing code needs it: CUDA ops return once their work is queued.
void synchronize(Device device);
// How often the host has waited for `device` since the process started: stream synchronisations
// (every wait for the queued work, including the one behind each download) and device-to-host
// copies. Both stay 0 for the CPU. A training step on CUDA should do neither except when it logs
// its loss: benchmarks and tests take the difference around a step. With
// ATTNLAB_TRACE_HOST_WAITS=1 each wait prints its call stack to stderr.
struct HostWaits {
  std::int64_t synchronizations = 0;
  std::int64_t downloads = 0;
  friend HostWaits operator-(const HostWaits& a, const HostWaits& b) {
    return {a.synchronizations - b.synchronizations, a.downloads - b.downloads};
  }
  friend HostWaits operator+(const HostWaits& a, const HostWaits& b) {
    return {a.synchronizations + b.synchronizations, a.downloads + b.downloads};
  }
};
HostWaits host_waits(Device device);

// The CUDA stream all of the core's work on `device` goes to (created on first use), for plugins
// that call CUDA libraries themselves (cuDNN, say): their work queued there stays ordered with the
// core's kernels and copies, with synchronize(), and with the caching allocator's reuse of freed
// memory. Throws an Error for the CPU and DeviceError on a build without CUDA.
CUstream_st* cuda_stream(Device device);

}  // namespace attnlab
