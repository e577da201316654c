#pragma once
// A caching allocator over a raw allocate/free pair, for devices where the raw calls are slow or
// synchronising (cudaMalloc / cudaFree). Backend-neutral: it never touches the memory it hands
// out, so it is unit-tested on the host with a counting fake backend.
//
//   - sizes are rounded up to a size class (round_size): multiples of 512 bytes up to 1 MiB,
//     above that 8 classes per power of two (at most 12.5 % extra);
//   - a freed block is kept in the cache; an allocation takes the smallest cached block that
//     fits (best fit) when that block wastes at most a quarter of the rounded size (bounded
//     waste), and otherwise asks the backend;
//   - when the backend reports out of memory, the cache is returned to it and the allocation
//     tried once more; a second failure throws an Error naming the sizes;
//   - empty_cache() returns every cached block; Options::max_cached_bytes bounds the cache, and
//     Options::max_reserved_bytes all the allocator holds;
//   - with caching off (the env switch ATTNLAB_NO_CACHING_ALLOCATOR=1, for memory checkers such
//     as compute-sanitizer), every call goes straight to the backend with the exact size.
//
// Blocks are never split or merged: a block is one raw allocation, so freeing it is one raw free.
//
// Reuse is safe only when every use of a block by the device is ordered before any use by its
// next owner. The CUDA allocator guarantees that by giving each device a single stream for all of
// its work (cuda/context.h): a block freed on the host while kernels that read it are still queued
// goes to a new tensor whose kernels are queued after them on the same stream.
//
// Private pools, for captured CUDA graphs. A graph replays its kernels on the addresses they had
// when the stream was captured, so every block that the captured work touched must stay the
// graph's for as long as the graph lives. Between begin_pool(id) and end_pool():
//   - allocations are served from pool `id` only (its cached blocks, else the backend); the
//     allocator neither synchronises nor returns memory to the backend (both are illegal while a
//     stream is captured), so running out of memory there is an OutOfMemory at once, without the
//     retry;
//   - a block freed joins pool `id`, whatever pool it came from: the captured kernels that used it
//     run again at every replay.
// Outside a section, a pool's block freed returns to its pool. release_pool(id) (the graphs that
// used it destroyed) moves the pool's cached blocks to the general cache; its blocks still in
// use join the general cache when freed. Graphs replayed one after another on one stream may
// share a pool. The statistics count pool blocks as the others; empty_cache() and
// max_cached_bytes concern the general cache only. Pools need caching: with caching off,
// begin_pool() throws.
//
// Thread-safe (one mutex); the statistics are exact.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "attnlab/allocator.h"

namespace attnlab {

class CachingAllocator {
 public:
  struct Backend {
    // Returns nullptr when the device is out of memory; throws on any other failure.
    std::function<void*(std::size_t bytes)> allocate;
    // bytes: as allocated. Must not throw (it runs from destructors).
    std::function<void(void* ptr, std::size_t bytes)> deallocate;
    // Optional: waits until the device no longer uses any block; called before the cache is
    // returned (empty_cache, the out-of-memory retry), since cached blocks may still be read by
    // queued work.
    std::function<void()> synchronize;
  };
  struct Options {
    std::string name = "device";  // named in errors, e.g. "cuda:0"
    bool caching = true;
    // At most this many bytes stay cached (0: no limit): a freed block that would exceed it
    // first makes the largest cached blocks go back to the backend, and a block larger than the
    // limit goes back itself. For the host, whose allocations do not fail when memory runs short
    // (the kernel overcommits), so the cache must bound itself.
    std::size_t max_cached_bytes = 0;
    // At most this many bytes held from the backend, in use and cached together (0: no limit):
    // an allocation beyond it fails as the backend's out of memory does (the cache returned, one
    // more try, then the error, which names the limit and `limit_source`, where it was set).
    std::size_t max_reserved_bytes = 0;
    std::string limit_source;  // e.g. "ATTNLAB_CUDA_MEMORY_LIMIT"
  };

  CachingAllocator(Backend backend, Options options);
  // Returns the cached blocks to the backend (blocks still in use are the owners' problem).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // At least `bytes` bytes (a zero-byte request gets a minimal block); throws Error when the
  // backend is out of memory even after the cache was emptied.
  void* allocate(std::size_t bytes);
  // `bytes` must be the size passed to allocate().
  void deallocate(void* ptr, std::size_t bytes);
  void empty_cache();
  AllocatorStats stats() const;
  std::size_t bytes_in_use() const;
  bool caching() const { return options_.caching; }

  // Private pools (above). begin_pool() throws when a section is open, the pool is unknown or
  // released, or caching is off; end_pool() when none is open; release_pool() for an unknown pool
  // or the one whose section is open.
  using PoolId = std::uint64_t;  // 0: the general pool
  PoolId create_pool();
  void begin_pool(PoolId id);
  void end_pool();
  void release_pool(PoolId id);
  PoolId active_pool() const;  // 0 outside a section

  // The size class of a request: what a new block for it holds.
  static std::size_t round_size(std::size_t bytes);
  // Whether a cached block of `block` bytes may serve a request whose size class is `rounded`.
  static bool fits(std::size_t block, std::size_t rounded);

 private:
  using Cache = std::multimap<std::size_t, void*>;  // block size -> free block
  void* allocate_raw(std::size_t bytes);  // with the one retry after emptying the cache
  void release_cache();                   // mutex held
  // One cached block back to the backend (the caller has synchronised the device); mutex held.
  void release_block(Cache::iterator it);

  struct Live {
    std::size_t block = 0;
    PoolId pool = 0;
  };
  struct Pool {
    Cache cached;
    std::size_t live = 0;   // its blocks handed out
    bool released = false;  // release_pool() called; erased once `live` is 0
  };
  // A cached block of cache that fits `rounded`, taken out of it (nullptr when none does).
  void* take_cached(Cache& cache, std::size_t rounded, std::size_t& block);
  // A freed block into the general cache, bounded by max_cached_bytes; mutex held.
  void cache_general(void* ptr, std::size_t block);

  Backend backend_;
  Options options_;
  mutable std::mutex mutex_;
  Cache cached_;                          // the general pool's free blocks
  std::size_t general_cached_bytes_ = 0;  // their bytes (stats_.bytes_cached adds the pools')
  std::unordered_map<void*, Live> live_;  // block handed out -> its size and pool
  std::map<PoolId, Pool> pools_;
  PoolId next_pool_ = 1, active_ = 0;
  AllocatorStats stats_;
};

// True when the environment asks to bypass caching allocators: ATTNLAB_NO_CACHING_ALLOCATOR set
// to anything but "" or "0".
bool caching_disabled_by_env();

}  // namespace attnlab
