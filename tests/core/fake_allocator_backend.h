#pragma once
// A fake raw backend for the caching allocator's tests: fake, never dereferenced addresses from a
// byte budget, every call counted.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "memory/caching_allocator.h"

namespace attnlab::testing {

inline constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// Hands out fake, never dereferenced addresses from a budget of `capacity` bytes and counts
// every call; nullptr when the budget is exhausted (out of memory).
struct FakeBackend {
  std::size_t capacity = std::size_t{1} << 40;
  std::size_t used = 0;
  std::uintptr_t next = 0x10000;
  int allocations = 0, frees = 0, refusals = 0;
  std::map<void*, std::size_t> live;  // pointer -> size it was allocated with
  std::vector<std::size_t> sizes;     // every size asked for
  std::mutex mutex;

  CachingAllocator::Backend backend() {
    return {[this](std::size_t bytes) -> void* {
              std::lock_guard lock(mutex);
              sizes.push_back(bytes);
              if (used + bytes > capacity) {
                ++refusals;
                return nullptr;
              }
              void* p = reinterpret_cast<void*>(next);
              next += (bytes + 255) / 256 * 256 + 256;
              used += bytes;
              live[p] = bytes;
              ++allocations;
              return p;
            },
            [this](void* p, std::size_t bytes) {
              std::lock_guard lock(mutex);
              REQUIRE(live.count(p) == 1);
              CHECK(live[p] == bytes);  // freed with the size it was allocated with
              live.erase(p);
              used -= bytes;
              ++frees;
            }};
  }
};

}  // namespace attnlab::testing
