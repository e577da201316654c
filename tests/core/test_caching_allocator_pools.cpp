// The caching allocator's private pools (what captured CUDA graphs need), over the counting fake
// backend: a pool's blocks serve only its sections, blocks freed in a section join the pool,
// nothing is synchronised or returned inside a section, release_pool() hands the blocks to the
// general cache, and mistakes are refused.
#include <doctest/doctest.h>

#include "attnlab/error.h"
#include "memory/caching_allocator.h"
#include "fake_allocator_backend.h"

using namespace attnlab;
using attnlab::testing::FakeBackend;
using attnlab::testing::KiB;

namespace {

CachingAllocator::Options named(bool caching = true) { return {"fake:0", caching}; }

}  // namespace

TEST_CASE("a private pool's blocks serve only its sections") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named());
  const CachingAllocator::PoolId pool = cache.create_pool();
  CHECK(pool != 0);
  CHECK(cache.active_pool() == 0);
  cache.begin_pool(pool);
  CHECK(cache.active_pool() == pool);
  void* a = cache.allocate(KiB);
  cache.deallocate(a, KiB);
  CHECK(cache.allocate(KiB) == a);  // reused within the section (the same stream order at replay)
  cache.deallocate(a, KiB);
  cache.end_pool();
  CHECK(cache.active_pool() == 0);
  // Outside, the pool's cached block is not handed out: a new one comes from the backend.
  void* c = cache.allocate(KiB);
  CHECK(c != a);
  CHECK(fake.allocations == 2);
  cache.deallocate(c, KiB);
  // The next section of the pool takes its own block, not the general one.
  cache.begin_pool(pool);
  CHECK(cache.allocate(KiB) == a);
  cache.deallocate(a, KiB);
  cache.end_pool();
  const AllocatorStats s = cache.stats();
  CHECK(s.bytes_cached == 2 * KiB);  // a in the pool, c in the general cache
  CHECK(s.bytes_in_use == 0);
  CHECK(s.raw_allocations == 2);
  CHECK(s.cache_hits == 2);
}

TEST_CASE("a block freed inside a section joins the pool, whatever pool it came from") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named());
  const CachingAllocator::PoolId pool = cache.create_pool();
  void* input = cache.allocate(KiB);  // allocated before the capture, freed during it
  cache.begin_pool(pool);
  cache.deallocate(input, KiB);
  cache.end_pool();
  void* other = cache.allocate(KiB);
  CHECK(other != input);  // the captured kernels read `input` again at every replay
  cache.deallocate(other, KiB);
  // Once the pool is released, its blocks serve anyone.
  cache.release_pool(pool);
  CHECK(fake.frees == 0);
  CHECK(cache.stats().bytes_cached == 2 * KiB);
  void* x = cache.allocate(KiB);
  void* y = cache.allocate(KiB);
  CHECK(((x == input && y == other) || (x == other && y == input)));
  CHECK(fake.allocations == 2);
  cache.deallocate(x, KiB);
  cache.deallocate(y, KiB);
}

TEST_CASE("a pool's block still in use returns to the pool, or to the general cache once released") {
  FakeBackend fake;
  CachingAllocator cache(fake.backend(), named());
  const CachingAllocator::PoolId pool = cache.create_pool();
  cache.begin_pool(pool);
  void* out = cache.allocate(KiB);  // a graph output, alive after the capture
  cache.end_pool();
  cache.deallocate(out, KiB);
  void* general = cache.allocate(KiB);
  CHECK(general != out);  // still the pool's
  cache.deallocate(general, KiB);

  cache.begin_pool(pool);
  CHECK(cache.allocate(KiB) == out);
  cache.end_pool();
  cache.release_pool(pool);  // the graph destroyed while its output lives on
  CHECK_THROWS_WITH_AS(cache.begin_pool(pool), doctest::Contains("begin_pool(1): no such pool (it was released)"),
                       Error);
  cache.deallocate(out, KiB);  // now the general cache's
  void* a = cache.allocate(KiB);
  void* b = cache.allocate(KiB);
  CHECK(((a == out && b == general) || (a == general && b == out)));
  CHECK(fake.allocations == 2);
  cache.deallocate(a, KiB);
  cache.deallocate(b, KiB);
  CHECK_THROWS_WITH_AS(cache.release_pool(pool), doctest::Contains("release_pool(1): no such pool"), Error);
}

TEST_CASE("inside a private pool's section nothing is synchronised or returned: out of memory at once") {
  FakeBackend fake;
  fake.capacity = 16 * KiB;
  int syncs = 0;
  CachingAllocator::Backend backend = fake.backend();
  backend.synchronize = [&] { ++syncs; };
  CachingAllocator::Options options = named();
  options.max_cached_bytes = 4 * KiB;
  CachingAllocator cache(backend, options);
  const CachingAllocator::PoolId pool = cache.create_pool();
  cache.deallocate(cache.allocate(4 * KiB), 4 * KiB);  // 4 KiB cached in the general pool
  cache.begin_pool(pool);
  void* a = cache.allocate(8 * KiB);
  void* b = cache.allocate(2 * KiB);
  // Freed in the section, 10 KiB exceed max_cached_bytes: kept all the same, nothing trimmed.
  cache.deallocate(a, 8 * KiB);
  cache.deallocate(b, 2 * KiB);
  CHECK(fake.frees == 0);
  CHECK(syncs == 0);
  // 4 + 8 + 2 of 16 KiB held, none cached in the pool fits 12 KiB: out of memory, without the
  // retry that would free the general cache.
  CHECK_THROWS_WITH_AS(cache.allocate(12 * KiB), doctest::Contains("cannot be returned while a CUDA graph is captured"),
                       OutOfMemory);
  CHECK(fake.frees == 0);
  CHECK(syncs == 0);
  CHECK(cache.stats().oom_retries == 0);
  CHECK_THROWS_WITH_AS(cache.empty_cache(), doctest::Contains("empty_cache() while private pool 1 is open"), Error);
  cache.end_pool();
  // Outside, the retry empties the general cache (the pool's blocks stay) and succeeds.
  void* c = cache.allocate(6 * KiB);
  CHECK(cache.stats().oom_retries == 1);
  CHECK(fake.frees == 1);
  CHECK(syncs == 1);
  cache.deallocate(c, 6 * KiB);
  // Released, the pool's blocks join the general cache within max_cached_bytes.
  cache.release_pool(pool);
  CHECK(cache.stats().bytes_cached <= 4 * KiB);
}

TEST_CASE("private pool mistakes are refused, and the destructor returns every pool's blocks") {
  FakeBackend fake;
  {
    CachingAllocator cache(fake.backend(), named());
    const CachingAllocator::PoolId p = cache.create_pool(), q = cache.create_pool();
    CHECK(p != q);
    CHECK_THROWS_WITH_AS(cache.end_pool(), doctest::Contains("end_pool() without begin_pool()"), Error);
    CHECK_THROWS_WITH_AS(cache.begin_pool(99), doctest::Contains("begin_pool(99): no such pool"), Error);
    cache.begin_pool(p);
    CHECK_THROWS_WITH_AS(cache.begin_pool(q), doctest::Contains("begin_pool(2) while pool 1 is open"), Error);
    CHECK_THROWS_WITH_AS(cache.release_pool(p), doctest::Contains("release_pool(1) while its section is open"),
                         Error);
    cache.deallocate(cache.allocate(3 * KiB), 3 * KiB);
    cache.end_pool();
    cache.begin_pool(q);
    cache.deallocate(cache.allocate(5 * KiB), 5 * KiB);
    cache.end_pool();
    cache.deallocate(cache.allocate(7 * KiB), 7 * KiB);
    CHECK(cache.stats().bytes_cached == 15 * KiB);
  }
  CHECK(fake.allocations == 3);
  CHECK(fake.frees == 3);
  CHECK(fake.live.empty());

  FakeBackend plain;
  CachingAllocator uncached(plain.backend(), named(false));
  const CachingAllocator::PoolId p = uncached.create_pool();
  CHECK_THROWS_WITH_AS(uncached.begin_pool(p), doctest::Contains("a private pool needs the caching allocator"), Error);
}
