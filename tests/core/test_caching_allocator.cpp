// The caching allocator over a counting fake backend: size classes, reuse (best fit with bounded
// waste), statistics, empty_cache, the retry after out of memory, the bypass switch.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "attnlab/error.h"
#include "attnlab/tensor.h"
#include "fake_allocator_backend.h"
#include "memory/caching_allocator.h"

using namespace attnlab;
using attnlab::testing::FakeBackend;
using attnlab::testing::KiB;
using attnlab::testing::MiB;

namespace {

CachingAllocator::Options named(bool caching = true) { return {"fake:0", caching}; }

}  // namespace

TEST_CASE("caching allocator size classes") {
  // Multiples of 512 bytes up to 1 MiB.
  CHECK(CachingAllocator::round_size(0) == 512);
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(100 * KiB + 1) == 100 * KiB + 512);
  CHECK(CachingAllocator::round_size(MiB) == MiB);
  // Above: eight classes per power of two, i.e. steps of 1/8 of the power of two below.
  CHECK(CachingAllocator::round_size(MiB + 1) == MiB + 128 * KiB);
  CHECK(CachingAllocator::round_size(2 * MiB) == 2 * MiB);
  CHECK(CachingAllocator::round_size(3 * MiB + 1) == 3 * MiB + 256 * KiB);
  CHECK(CachingAllocator::round_size(100 * MiB) == 104 * MiB);  // 64 MiB octave: steps of 8 MiB
  // Never smaller than asked, never more than 1/8 larger above 1 MiB.
  for (std::size_t n = MiB + 1; n < 64 * MiB; n = n * 9 / 7 + 12345) {
    const std::size_t r = CachingAllocator::round_size(n);
    CHECK(r >= n);
    CHECK(r - n <= n / 8);
  }
}

TEST_CASE("caching allocator reuses a freed block instead of calling the backend") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named());
  void* a = cache.allocate(1000);
  cache.deallocate(a, 1000);
  CHECK(fake.frees == 0);  // kept
  void* b = cache.allocate(900);  // the same size class (1024)
  CHECK(b == a);
  CHECK(fake.allocations == 1);
  const AllocatorStats s = cache.stats();
  CHECK(s.raw_allocations == 1);
  CHECK(s.cache_hits == 1);
  CHECK(s.bytes_in_use == 900);
  cache.deallocate(b, 900);
}

TEST_CASE("caching allocator takes the best fitting cached block") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named());
  void* p4 = cache.allocate(4 * KiB);
  void* p8 = cache.allocate(8 * KiB);
  void* p6 = cache.allocate(6 * KiB);
  cache.deallocate(p8, 8 * KiB);
  cache.deallocate(p4, 4 * KiB);
  cache.deallocate(p6, 6 * KiB);
  // 5000 bytes -> class 5120: both the 6 KiB and the 8 KiB block fit; the smaller one is taken.
  CHECK(cache.allocate(5000) == p6);
  CHECK(cache.allocate(4 * KiB) == p4);  // exact fit
  CHECK(cache.allocate(7 * KiB) == p8);  // 8 KiB for 7 KiB: 1 KiB over, within a quarter
  CHECK(fake.allocations == 3);
}

TEST_CASE("caching allocator does not waste a large cached block on a small request") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named());
  void* big = cache.allocate(64 * KiB);
  cache.deallocate(big, 64 * KiB);
  void* small = cache.allocate(KiB);  // 64 KiB would waste 63 KiB: a new block
  CHECK(small != big);
  CHECK(fake.allocations == 2);
  // A block more than a quarter larger than the class is not used either.
  void* mid = cache.allocate(50 * KiB);  // class 50 KiB; 64 KiB is 28 % larger
  CHECK(mid != big);
  CHECK(fake.allocations == 3);
  void* fits = cache.allocate(52 * KiB);  // 64 KiB is 23 % larger
  CHECK(fits == big);
}

TEST_CASE("caching allocator statistics and empty_cache") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named());
  void* a = cache.allocate(1000);     // block 1024
  void* b = cache.allocate(3 * MiB);  // block 3 MiB
  AllocatorStats s = cache.stats();
  CHECK(s.bytes_in_use == 1000 + 3 * MiB);  // what was asked for, as Allocator::bytes_in_use
  CHECK(s.bytes_reserved == 1024 + 3 * MiB);
  CHECK(s.bytes_cached == 0);
  CHECK(s.raw_allocations == 2);
  cache.deallocate(b, 3 * MiB);
  s = cache.stats();
  CHECK(s.bytes_in_use == 1000);
  CHECK(s.peak_bytes_in_use == 1000 + 3 * MiB);
  CHECK(s.bytes_reserved == 1024 + 3 * MiB);  // the freed block is still held
  CHECK(s.bytes_cached == 3 * MiB);
  CHECK(cache.bytes_in_use() == 1000);
  cache.empty_cache();
  s = cache.stats();
  CHECK(s.bytes_reserved == 1024);
  CHECK(s.bytes_cached == 0);
  CHECK(s.peak_bytes_reserved == 1024 + 3 * MiB);
  CHECK(s.raw_frees == 1);
  CHECK(fake.live.size() == 1);
  cache.deallocate(a, 1000);
  cache.empty_cache();
  CHECK(fake.live.empty());
  CHECK(fake.frees == fake.allocations);
}

TEST_CASE("caching allocator returns its cache to the backend when destroyed") {
  FakeBackend fake;
  {
    CachingAllocator cache(fake.backend(), named());
    cache.deallocate(cache.allocate(10 * KiB), 10 * KiB);
    cache.deallocate(cache.allocate(20 * KiB), 20 * KiB);
  }
  CHECK(fake.allocations == 2);
  CHECK(fake.live.empty());
}

TEST_CASE("caching allocator empties the cache and retries once when out of memory") {
  FakeBackend fake;
  fake.capacity = 16 * KiB;
  CachingAllocator cache(fake.backend(), named());
  void* a = cache.allocate(8 * KiB);
  cache.deallocate(a, 8 * KiB);  // cached: the backend has 8 KiB left
  void* b = cache.allocate(12 * KiB);  // 8 + 12 > 16: refused, cache freed, retried
  CHECK(b != nullptr);
  CHECK(fake.refusals == 1);
  CHECK(fake.frees == 1);
  const AllocatorStats s = cache.stats();
  CHECK(s.oom_retries == 1);
  CHECK(s.bytes_reserved == 12 * KiB);
  CHECK(s.bytes_in_use == 12 * KiB);
  cache.deallocate(b, 12 * KiB);
}

TEST_CASE("caching allocator out of memory after the retry is an error naming the sizes") {
  FakeBackend fake;
  fake.capacity = 16 * KiB;
  CachingAllocator cache(fake.backend(), named());
  void* a = cache.allocate(10 * KiB);
  void* c = cache.allocate(4 * KiB);
  cache.deallocate(c, 4 * KiB);  // 4 KiB cached
  CHECK_THROWS_WITH_AS(cache.allocate(40 * KiB),
                       doctest::Contains("fake:0: out of memory allocating 40.0 KiB (40960 bytes requested); "
                                         "10.0 KiB in use by tensors, 14.0 KiB reserved of which 4.0 KiB was cached "
                                         "(returned to the device before one more try), 10.0 KiB still reserved "
                                         "after that; peak in use 14.0 KiB. Lower training.batch_tokens"),
                       OutOfMemory);
  CHECK(fake.refusals == 2);  // the first try and the retry
  CHECK(fake.frees == 1);     // the cached block went back
  // Nothing leaked or miscounted: the live block is intact and can be freed.
  CHECK(cache.stats().bytes_in_use == 10 * KiB);
  cache.deallocate(a, 10 * KiB);
  cache.empty_cache();
  CHECK(fake.live.empty());
}

TEST_CASE("caching allocator with caching off passes every call through with the exact size") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named(false));
  CHECK_FALSE(cache.caching());
  void* a = cache.allocate(1000);
  CHECK(fake.sizes.back() == 1000);
  void* z = cache.allocate(0);
  CHECK(z != nullptr);
  CHECK(fake.sizes.back() == 1);
  AllocatorStats s = cache.stats();
  CHECK(s.bytes_in_use == 1000);
  CHECK(s.bytes_reserved == 1001);
  cache.deallocate(a, 1000);
  cache.deallocate(z, 0);
  CHECK(fake.frees == 2);  // at once
  s = cache.stats();
  CHECK(s.bytes_reserved == 0);
  CHECK(s.raw_frees == 2);
  CHECK(s.cache_hits == 0);
}

TEST_CASE("caching allocator env switch ATTNLAB_NO_CACHING_ALLOCATOR") {
  const char* saved = std::getenv("ATTNLAB_NO_CACHING_ALLOCATOR");
  const std::string old = saved ? saved : "";
  ::unsetenv("ATTNLAB_NO_CACHING_ALLOCATOR");
  CHECK_FALSE(caching_disabled_by_env());
  ::setenv("ATTNLAB_NO_CACHING_ALLOCATOR", "1", 1);
  CHECK(caching_disabled_by_env());
  ::setenv("ATTNLAB_NO_CACHING_ALLOCATOR", "0", 1);
  CHECK_FALSE(caching_disabled_by_env());
  ::setenv("ATTNLAB_NO_CACHING_ALLOCATOR", "", 1);
  CHECK_FALSE(caching_disabled_by_env());
  if (saved) ::setenv("ATTNLAB_NO_CACHING_ALLOCATOR", old.c_str(), 1);
  else ::unsetenv("ATTNLAB_NO_CACHING_ALLOCATOR");
}

TEST_CASE("caching allocator bounds its cache with max_cached_bytes") {
  FakeBackend fake;
  CachingAllocator a(fake.backend(), {"fake:0", true, 3 * MiB});
  void* p1 = a.allocate(1 * MiB);
  void* p2 = a.allocate(2 * MiB);
  void* p3 = a.allocate(1 * MiB + 128 * KiB);
  void* big = a.allocate(4 * MiB);
  a.deallocate(p1, 1 * MiB);
  a.deallocate(p3, 1 * MiB + 128 * KiB);
  CHECK(a.stats().bytes_cached == 2 * MiB + 128 * KiB);
  CHECK(fake.frees == 0);
  // 2 MiB more would make 4 MiB + 128 KiB cached: the largest cached block (p2's) goes back.
  a.deallocate(p2, 2 * MiB);
  CHECK(fake.frees == 1);
  CHECK(a.stats().bytes_cached == 2 * MiB + 128 * KiB);
  CHECK(fake.live.count(p2) == 0);
  // A block over the limit is never cached.
  a.deallocate(big, 4 * MiB);
  CHECK(fake.frees == 2);
  CHECK(fake.live.count(big) == 0);
  CHECK(a.stats().bytes_cached == 2 * MiB + 128 * KiB);
  CHECK(a.stats().bytes_reserved == 2 * MiB + 128 * KiB);
  CHECK(a.stats().bytes_in_use == 0);
  // The two cached blocks still serve requests of their classes.
  void* again = a.allocate(1 * MiB);
  CHECK(fake.allocations == 4);
  a.deallocate(again, 1 * MiB);
}

TEST_CASE("the host allocator hands a freed block out again") {
  if (caching_disabled_by_env()) {
    MESSAGE("ATTNLAB_NO_CACHING_ALLOCATOR is set: skipped");
    return;
  }
  const AllocatorStats before = memory_stats(Device::cpu());
  { const Tensor a = Tensor::empty({3, 1000, 1000}, DType::f32, Device::cpu()); }
  const AllocatorStats mid = memory_stats(Device::cpu());
  { const Tensor b = Tensor::empty({1000, 3000}, DType::f32, Device::cpu()); }  // the same 12 MB
  const AllocatorStats after = memory_stats(Device::cpu());
  CHECK(after.cache_hits > mid.cache_hits);
  CHECK(after.raw_allocations == mid.raw_allocations);
  CHECK(mid.raw_allocations >= before.raw_allocations);
}

TEST_CASE("caching allocator keeps exact statistics under concurrent use") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 500; ++i) {
        const std::size_t bytes = static_cast<std::size_t>(512 * (1 + (i + t) % 7));
        void* p = cache.allocate(bytes);
        cache.deallocate(p, bytes);
      }
    });
  for (auto& th : threads) th.join();
  const AllocatorStats s = cache.stats();
  CHECK(s.bytes_in_use == 0);
  CHECK(s.raw_allocations + s.cache_hits == 2000);
  CHECK(s.bytes_reserved == s.bytes_cached);
  CHECK(fake.allocations == static_cast<int>(s.raw_allocations));
  // At most 4 threads hold a block at once, and there are 7 classes.
  CHECK(s.raw_allocations <= 28);
}

TEST_CASE("caching allocator waits for the device before returning its cache") {
  FakeBackend fake;
  int syncs = 0;
  CachingAllocator::Backend backend = fake.backend();
  backend.synchronize = [&] {
    CHECK(fake.frees == 0);  // before any block goes back
    ++syncs;
  };
  CachingAllocator cache(backend, named());
  cache.empty_cache();
  CHECK(syncs == 0);  // nothing cached: nothing to wait for
  cache.deallocate(cache.allocate(KiB), KiB);
  cache.empty_cache();
  CHECK(syncs == 1);
  CHECK(fake.frees == 1);
}

// (Address sanitizer's allocator reports such a request instead of returning null.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNLAB_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ATTNLAB_TEST_UNDER_ASAN 1
#endif
#ifndef ATTNLAB_TEST_UNDER_ASAN
TEST_CASE("a tensor the host cannot hold is refused naming its shape and what to lower") {
  const Shape huge{std::int64_t{1} << 25, std::int64_t{1} << 24};  // 2^51 bytes of f32
  CHECK_THROWS_WITH_AS(Tensor::empty(huge, DType::f32, Device::cpu()),
                       doctest::Contains("a cpu f32 tensor of shape [33554432, 16777216]: cpu: out of memory allocating "),
                       OutOfMemory);
  CHECK_THROWS_WITH_AS(Tensor::empty(huge, DType::f32, Device::cpu()),
                       doctest::Contains("(2251799813685248 bytes requested)"), OutOfMemory);
  CHECK_THROWS_WITH_AS(Tensor::empty(huge, DType::f32, Device::cpu()), doctest::Contains("training.batch_tokens"),
                       OutOfMemory);
}
#endif

TEST_CASE("caching allocator holds at most max_reserved_bytes, as if the device had no more") {
  FakeBackend fake;  // a device with far more memory than the limit
  CachingAllocator::Options options = named();
  options.max_reserved_bytes = 16 * KiB;
  options.limit_source = "ATTNLAB_CUDA_MEMORY_LIMIT";
  CachingAllocator cache(fake.backend(), options);
  void* a = cache.allocate(8 * KiB);
  cache.deallocate(a, 8 * KiB);        // cached: 8 KiB of the 16 still free
  void* b = cache.allocate(12 * KiB);  // 8 + 12 > 16: the cache goes back, then it fits
  CHECK(cache.stats().oom_retries == 1);
  CHECK(fake.frees == 1);
  CHECK(fake.refusals == 0);  // the limit refused, not the device
  CHECK_THROWS_WITH_AS(cache.allocate(8 * KiB),
                       doctest::Contains("peak in use 12.0 KiB. The allocator may hold at most 16.0 KiB "
                                         "(ATTNLAB_CUDA_MEMORY_LIMIT). Lower training.batch_tokens"),
                       OutOfMemory);
  CHECK_THROWS_AS(cache.allocate(std::size_t{1} << 40), OutOfMemory);  // beyond the limit by itself
  CHECK(cache.stats().bytes_reserved == 12 * KiB);  // nothing miscounted
  cache.deallocate(b, 12 * KiB);
  void* c = cache.allocate(16 * KiB);  // exactly the limit
  cache.deallocate(c, 16 * KiB);
  cache.empty_cache();
  CHECK(fake.live.empty());
}
