#pragma once
// Per-device memory. Each device has one allocator; tensors own their storage through Storage.
#include <cstddef>
#include <memory>

#include "attnlab/device.h"

namespace attnlab {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns at least `bytes` bytes aligned to 64; throws Error when memory is exhausted.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual Device device() const = 0;
  // Bytes currently handed out by this allocator (for tests and memory reports).
  virtual std::size_t bytes_in_use() const = 0;
};

// The allocator of `device`. Throws DeviceError for a CUDA device on a build without CUDA.
Allocator& allocator_for(Device device);

// A block of device memory, freed through its allocator when the last tensor using it goes.
class Storage {
 public:
  Storage(Device device, std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  Device device_;
  std::size_t bytes_;
  Allocator* allocator_;
  void* data_;
};

}  // namespace attnlab
