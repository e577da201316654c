#include "attnlab/allocator.h"

#include <atomic>
#include <cstdlib>

#include "attnlab/error.h"
#include "cuda/runtime.h"
#include "dispatch.h"

namespace attnlab {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* ptr = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (ptr == nullptr)
      throw OutOfMemory(fmt::format("cpu: out of memory allocating {} bytes ({} in use by tensors); lower "
                                    "training.batch_tokens or [eval] batch_tokens, or run a smaller model",
                                    bytes, in_use_.load()));
    const std::size_t now = in_use_ += bytes;
    for (std::size_t peak = peak_.load(); now > peak && !peak_.compare_exchange_weak(peak, now);) {
    }
    ++allocations_;
    return ptr;
  }
  void deallocate(void* ptr, std::size_t bytes) override {
    std::free(ptr);
    in_use_ -= bytes;
    ++frees_;
  }
  Device device() const override { return Device::cpu(); }
  std::size_t bytes_in_use() const override { return in_use_; }
  // No cache: reserved is what is in use.
  AllocatorStats stats() const override {
    AllocatorStats s;
    s.bytes_in_use = s.bytes_reserved = in_use_;
    s.peak_bytes_in_use = s.peak_bytes_reserved = peak_;
    s.raw_allocations = allocations_;
    s.raw_frees = frees_;
    return s;
  }

 private:
  std::atomic<std::size_t> in_use_ = 0, peak_ = 0;
  std::atomic<std::uint64_t> allocations_ = 0, frees_ = 0;
};

}  // namespace

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) {
    static CpuAllocator cpu;
    return cpu;
  }
  ATTNLAB_CUDA_ONLY(fmt::format("allocating a tensor on {}", device.str()).c_str(),
                    return cuda::allocator(device.index));
}

AllocatorStats memory_stats(Device device) { return allocator_for(device).stats(); }
void empty_cache(Device device) { allocator_for(device).empty_cache(); }

Storage::Storage(Device device, std::size_t bytes)
    : device_(device), bytes_(bytes), allocator_(&allocator_for(device)),
      data_(allocator_->allocate(bytes)) {}

Storage::~Storage() { allocator_->deallocate(data_, bytes_); }

}  // namespace attnlab
