#pragma once
// Counter-based random numbers (Philox-4x32-10, Salmon et al. 2011). A number depends only on
// (seed, counter), never on the thread or device that draws it, so dropout masks are identical
// for any thread count and on any backend.
#include <array>
#include <cstdint>

namespace attnlab {

struct PhiloxKey {
  std::uint32_t k0, k1;
};

// One Philox-4x32-10 block: four 32-bit random words for the 128-bit counter (c0..c3).
std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> counter, PhiloxKey key);

// The uniform float in [0, 1) of element `index` of the stream (seed, offset): element i uses
// word i % 4 of the block at counter (offset + i / 4).
float philox_uniform(std::uint64_t seed, std::uint64_t offset, std::uint64_t index);

// A generator hands out disjoint counter ranges: each draw of n numbers advances the offset by
// ceil(n / 4) blocks. Its state (seed, offset) is plain data, saved in checkpoints.
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}
  struct Draw {
    std::uint64_t seed;
    std::uint64_t offset;
  };
  Draw reserve(std::uint64_t count);
  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_; }
  void set_state(std::uint64_t seed, std::uint64_t offset) { seed_ = seed, offset_ = offset; }

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

}  // namespace attnlab
