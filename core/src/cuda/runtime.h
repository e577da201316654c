#pragma once
// The CUDA runtime pieces the core needs (defined in .cu files). Call them only through the
// macros of dispatch.h, which compile them out of a build without CUDA.
//
// Every operation is queued on the device's context stream (cuda/context.h); the ones that hand
// data to the host synchronise that stream first.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnlab/allocator.h"
#include "attnlab/dtype.h"

namespace attnlab::cuda {

// Visible CUDA devices; 0 when the driver or the devices are missing. With `why`, the reason
// there are none (the error of cudaGetDeviceCount), or "" when there are some.
int device_count(std::string* why = nullptr);
// The compute capability of device `index` (9 and 0 for an H200), and its name.
void compute_capability(int index, int& major, int& minor, std::string& name);
// "NVIDIA H200, 139.8 GiB, sm_90, driver CUDA 12.8" (attnlab::describe_device).
std::string describe(int index);
// The caching allocator of device `index` (caching_allocator.h over cudaMalloc / cudaFree).
Allocator& allocator(int index);
// bytes from src to dst between any two devices (host included). A copy to the host is
// synchronous (the host may read its buffer on return); one from the host returns once the
// driver has taken the data (the host may free its buffer), without waiting for the device; a
// copy within one device is queued on its stream; a copy between two devices waits for the
// source's stream and for the copy.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
// dst[0..n) = value, converted to dtype. Asynchronous on the device's stream.
void fill(void* dst, DType dtype, std::int64_t n, double value, int device_index);
// dst[i] = convert(src[i]) for i < n, both on device `device_index`, by the rules of convert_cpu
// (floats to ints truncate, bf16 through f32). Asynchronous on the device's stream.
void convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, std::int64_t n, int device_index);
// Blocks until the work queued on the device's stream is done.
void synchronize(int device_index);
// The host waits for device `device_index` and the copies from it so far (Context's counters).
void host_waits(int device_index, std::int64_t& synchronizations, std::int64_t& downloads);

}  // namespace attnlab::cuda
