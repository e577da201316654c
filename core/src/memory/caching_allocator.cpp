#include "memory/caching_allocator.h"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "attnlab/error.h"
#include "attnlab/env.h"

namespace attnlab {
namespace {

constexpr std::size_t kSmallStep = 512;                // size classes up to kSmallLimit
constexpr std::size_t kSmallLimit = std::size_t{1} << 20;
constexpr std::size_t kClassesPerOctave = 8;           // above kSmallLimit

std::string human_bytes(std::size_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024.0 * 1024.0) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
  if (b >= 1024.0 * 1024.0) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

bool caching_disabled_by_env() { return env::flag("ATTNLAB_NO_CACHING_ALLOCATOR"); }

std::size_t CachingAllocator::round_size(std::size_t bytes) {
  if (bytes <= kSmallLimit) return bytes <= kSmallStep ? kSmallStep : (bytes + kSmallStep - 1) / kSmallStep * kSmallStep;
  if (bytes > std::numeric_limits<std::size_t>::max() / 2) return bytes;  // no class: the backend will refuse it
  const std::size_t step = std::bit_floor(bytes) / kClassesPerOctave;
  return (bytes + step - 1) / step * step;
}

bool CachingAllocator::fits(std::size_t block, std::size_t rounded) {
  return block >= rounded && block - rounded <= rounded / 4;
}

CachingAllocator::CachingAllocator(Backend backend, Options options)
    : backend_(std::move(backend)), options_(std::move(options)) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  for (auto& [id, pool] : pools_) {  // every cached block goes back, the pools' too
    for (const auto& [block, ptr] : pool.cached) {
      cached_.emplace(block, ptr);
      general_cached_bytes_ += block;
    }
    pool.cached.clear();
  }
  release_cache();
}

void* CachingAllocator::allocate_raw(std::size_t bytes) {
  // The backend's allocation, or out of memory (nullptr) where the limit would be passed.
  const auto try_backend = [&]() -> void* {
    const std::size_t limit = options_.max_reserved_bytes;
    if (limit > 0 && (bytes > limit || stats_.bytes_reserved > limit - bytes)) return nullptr;
    return backend_.allocate(bytes);
  };
  void* ptr = try_backend();
  if (ptr == nullptr) {
    // Out of memory: give the cache back and try once more (not in a private pool's section,
    // where returning memory is illegal).
    const std::size_t cached = stats_.bytes_cached, reserved = stats_.bytes_reserved;
    if (active_ == 0) {
      ++stats_.oom_retries;
      release_cache();
      ptr = try_backend();
    }
    if (ptr == nullptr) {
      const std::string limit =
          options_.max_reserved_bytes == 0
              ? std::string()
              : fmt::format(" The allocator may hold at most {}{}.", human_bytes(options_.max_reserved_bytes),
                            options_.limit_source.empty() ? "" : " (" + options_.limit_source + ")");
      const std::string retry =
          active_ == 0 ? fmt::format("(returned to the device before one more try), {} still reserved after that",
                                     human_bytes(stats_.bytes_reserved))
                       : "(kept: memory cannot be returned while a CUDA graph is captured)";
      throw OutOfMemory(fmt::format(
          "{}: out of memory allocating {} ({} bytes requested); {} in use by tensors, {} reserved of which {} was "
          "cached {}; peak in use {}.{} Lower training.batch_tokens (tokens per batch; training.accumulate keeps "
          "the effective batch) or [eval] batch_tokens, or run a smaller model",
          options_.name, human_bytes(bytes), bytes, human_bytes(stats_.bytes_in_use), human_bytes(reserved),
          human_bytes(cached), retry, human_bytes(stats_.peak_bytes_in_use), limit));
    }
  }
  ++stats_.raw_allocations;
  stats_.bytes_reserved += bytes;
  stats_.peak_bytes_reserved = std::max(stats_.peak_bytes_reserved, stats_.bytes_reserved);
  return ptr;
}

void* CachingAllocator::take_cached(Cache& cache, std::size_t rounded, std::size_t& block) {
  auto it = cache.lower_bound(rounded);  // the smallest cached block that is large enough
  if (it == cache.end() || !fits(it->first, rounded)) return nullptr;
  block = it->first;
  void* ptr = it->second;
  cache.erase(it);
  stats_.bytes_cached -= block;
  ++stats_.cache_hits;
  return ptr;
}

void* CachingAllocator::allocate(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  void* ptr = nullptr;
  if (!options_.caching) {
    ptr = allocate_raw(bytes == 0 ? 1 : bytes);
  } else {
    const std::size_t rounded = round_size(bytes);
    std::size_t block = rounded;
    if (active_ != 0) {
      Pool& pool = pools_.at(active_);
      ptr = take_cached(pool.cached, rounded, block);
      if (ptr == nullptr) ptr = allocate_raw(rounded);
      ++pool.live;
    } else {
      ptr = take_cached(cached_, rounded, block);
      if (ptr != nullptr) general_cached_bytes_ -= block;
      else ptr = allocate_raw(rounded);
    }
    live_.emplace(ptr, Live{block, active_});
  }
  stats_.bytes_in_use += bytes;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr, std::size_t bytes) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  stats_.bytes_in_use -= bytes;
  if (!options_.caching) {
    const std::size_t raw = bytes == 0 ? 1 : bytes;
    backend_.deallocate(ptr, raw);
    ++stats_.raw_frees;
    stats_.bytes_reserved -= raw;
    return;
  }
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    // Called from tensor destructors, where an exception would end the program anyway.
    std::fprintf(stderr, "attnlab: %s: freeing a pointer this allocator did not hand out\n", options_.name.c_str());
    std::abort();
  }
  const Live freed = it->second;
  live_.erase(it);
  PoolId home = freed.pool;
  if (freed.pool != 0) {
    auto pool = pools_.find(freed.pool);
    --pool->second.live;
    if (pool->second.released) {
      home = 0;
      if (pool->second.live == 0) pools_.erase(pool);
    }
  }
  if (active_ != 0) home = active_;  // the captured work may use it again at every replay
  if (home != 0) {
    pools_.at(home).cached.emplace(freed.block, ptr);
    stats_.bytes_cached += freed.block;
    return;
  }
  cache_general(ptr, freed.block);
}

void CachingAllocator::cache_general(void* ptr, std::size_t block) {
  const std::size_t limit = options_.max_cached_bytes;
  if (limit > 0 && block > limit) {  // never cached: straight back
    backend_.deallocate(ptr, block);
    ++stats_.raw_frees;
    stats_.bytes_reserved -= block;
    return;
  }
  cached_.emplace(block, ptr);
  stats_.bytes_cached += block;
  general_cached_bytes_ += block;
  // Over the limit: the largest cached blocks go back first (the fewest calls for the bytes).
  if (limit > 0 && general_cached_bytes_ > limit && backend_.synchronize) backend_.synchronize();
  while (limit > 0 && general_cached_bytes_ > limit) release_block(std::prev(cached_.end()));
}

void CachingAllocator::release_block(Cache::iterator it) {
  backend_.deallocate(it->second, it->first);
  ++stats_.raw_frees;
  stats_.bytes_reserved -= it->first;
  stats_.bytes_cached -= it->first;
  general_cached_bytes_ -= it->first;
  cached_.erase(it);
}

void CachingAllocator::release_cache() {
  if (!cached_.empty() && backend_.synchronize) backend_.synchronize();
  while (!cached_.empty()) release_block(cached_.begin());
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  ATTNLAB_CHECK(active_ == 0, "{}: empty_cache() while private pool {} is open (a CUDA graph being captured)",
                options_.name, active_);
  release_cache();
}

CachingAllocator::PoolId CachingAllocator::create_pool() {
  std::lock_guard lock(mutex_);
  const PoolId id = next_pool_++;
  pools_.emplace(id, Pool{});
  return id;
}

void CachingAllocator::begin_pool(PoolId id) {
  std::lock_guard lock(mutex_);
  ATTNLAB_CHECK(options_.caching, "{}: a private pool needs the caching allocator, which is off "
                "(ATTNLAB_NO_CACHING_ALLOCATOR); CUDA graphs cannot be captured without it", options_.name);
  ATTNLAB_CHECK(active_ == 0, "{}: begin_pool({}) while pool {} is open", options_.name, id, active_);
  const auto pool = pools_.find(id);
  ATTNLAB_CHECK(pool != pools_.end() && !pool->second.released, "{}: begin_pool({}): no such pool{}", options_.name,
                id, pool != pools_.end() ? " (it was released)" : "");
  active_ = id;
}

void CachingAllocator::end_pool() {
  std::lock_guard lock(mutex_);
  ATTNLAB_CHECK(active_ != 0, "{}: end_pool() without begin_pool()", options_.name);
  active_ = 0;
}

void CachingAllocator::release_pool(PoolId id) {
  std::lock_guard lock(mutex_);
  const auto pool = pools_.find(id);
  ATTNLAB_CHECK(pool != pools_.end() && !pool->second.released, "{}: release_pool({}): no such pool", options_.name,
                id);
  ATTNLAB_CHECK(active_ != id, "{}: release_pool({}) while its section is open", options_.name, id);
  Cache blocks = std::move(pool->second.cached);
  if (pool->second.live == 0) pools_.erase(pool);
  else pool->second.released = true;
  for (const auto& [block, ptr] : blocks) {
    stats_.bytes_cached -= block;
    cache_general(ptr, block);
  }
}

CachingAllocator::PoolId CachingAllocator::active_pool() const {
  std::lock_guard lock(mutex_);
  return active_;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::size_t CachingAllocator::bytes_in_use() const {
  std::lock_guard lock(mutex_);
  return stats_.bytes_in_use;
}

}  // namespace attnlab
