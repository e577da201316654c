#pragma once
// Per-device memory. Each device has one allocator; tensors own their storage through Storage.
// A CUDA device's allocator caches freed blocks (see core/src/memory/caching_allocator.h); the host's
// hands memory straight to and from the C library.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "attnlab/device.h"

namespace attnlab {

// Memory statistics of one device's allocator.
struct AllocatorStats {
  std::size_t bytes_in_use = 0;         // bytes handed out to live tensors (requested sizes)
  std::size_t peak_bytes_in_use = 0;
  std::size_t bytes_reserved = 0;       // held from the device: live blocks (rounded) + cached blocks
  std::size_t peak_bytes_reserved = 0;
  std::size_t bytes_cached = 0;         // freed blocks kept for reuse (part of bytes_reserved)
  std::uint64_t raw_allocations = 0;    // calls that reached the device's own allocator
  std::uint64_t raw_frees = 0;
  std::uint64_t cache_hits = 0;         // allocations served from the cache
  std::uint64_t oom_retries = 0;        // out-of-memory errors answered by emptying the cache
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns at least `bytes` bytes aligned to 64; throws Error when memory is exhausted.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual Device device() const = 0;
  // Bytes currently handed out by this allocator (for tests and memory reports).
  virtual std::size_t bytes_in_use() const = 0;
  virtual AllocatorStats stats() const = 0;
  // Returns cached free blocks to the device (no-op for an allocator without a cache).
  virtual void empty_cache() {}
};

// The allocator of `device`. Throws DeviceError for a CUDA device on a build without CUDA.
Allocator& allocator_for(Device device);
// allocator_for(device).stats() / .empty_cache().
AllocatorStats memory_stats(Device device);
void empty_cache(Device device);

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
