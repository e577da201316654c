#include "attnlab/allocator.h"

#include <unistd.h>

#include <cstdlib>

#include "attnlab/error.h"
#include "cuda/runtime.h"
#include "dispatch.h"
#include "memory/caching_allocator.h"

namespace attnlab {
namespace {

// The host's allocator: a CachingAllocator over 64-byte aligned malloc. Freed blocks are kept and
// handed out again, so the large activations of a training step (the [tokens, vocab] logits and
// their gradient, hundreds of MB) come back already mapped instead of page-faulting anew in every
// step (on a two-core VM a third of the base model's step went to page faults). The cache holds
// at most a quarter of the machine's memory (Options::max_cached_bytes); ATTNLAB_NO_CACHING_ALLOCATOR
// turns it off (for memory checkers).
std::size_t host_cache_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::size_t{1} << 30;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 4;
}

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator()
      : cache_(CachingAllocator::Backend{[](std::size_t bytes) -> void* {
                                           const std::size_t rounded = (bytes + 63) / 64 * 64;
                                           return std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
                                         },
                                         [](void* ptr, std::size_t) { std::free(ptr); }, {}},
               CachingAllocator::Options{.name = "cpu",
                                         .caching = !caching_disabled_by_env(),
                                         .max_cached_bytes = host_cache_limit(),
                                         .max_reserved_bytes = 0,  // the host's limit is the kernel's
                                         .limit_source = {}}) {}
  void* allocate(std::size_t bytes) override { return cache_.allocate(bytes); }
  void deallocate(void* ptr, std::size_t bytes) override { cache_.deallocate(ptr, bytes); }
  Device device() const override { return Device::cpu(); }
  std::size_t bytes_in_use() const override { return cache_.bytes_in_use(); }
  AllocatorStats stats() const override { return cache_.stats(); }
  void empty_cache() override { cache_.empty_cache(); }

 private:
  CachingAllocator cache_;
};

}  // namespace

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) {
    // Never destroyed: tensors held by other static objects may be freed after main returns.
    static CpuAllocator* cpu = new CpuAllocator();
    return *cpu;
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
