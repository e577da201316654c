#pragma once
// Scratch device memory for the kernels of one call, from the device's caching allocator
// (runtime.h) rather than a cudaMalloc / cudaFree pair per call, which would synchronise the
// device and reach the driver on every step. Plain header: nvcc reads it.
#include <cstddef>

namespace attnlab {
class Allocator;
}

namespace attnlab::cuda {

// `bytes` bytes (at least one block) on device `device_index`, handed back to its allocator at
// scope exit. That may happen while kernels that use the block are still queued: its next owner's
// work is queued after them on the same stream (caching_allocator.h), so every use of the block
// must be on the device's context stream. Throws attnlab::Error when the device is out of memory.
class DeviceScratch {
 public:
  DeviceScratch(int device_index, std::size_t bytes);
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  Allocator* allocator_;
  std::size_t bytes_;
  void* ptr_;
};

// The calling thread's current device (cudaGetDevice): for launchers that take a stream rather
// than a device index, whose pointers are on the current device (cuda/elementwise.h).
int current_device();

}  // namespace attnlab::cuda
