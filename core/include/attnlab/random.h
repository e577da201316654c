#pragma once
// Counter-based random numbers (Philox-4x32-10, Salmon et al. 2011). A number depends only on
// (seed, counter), never on the thread or device that draws it, so dropout masks are identical
// for any thread count and on any backend.
#include <array>
#include <cstdint>
#include <memory>

#include "attnlab/device.h"
#include "attnlab/philox.h"

namespace attnlab {

struct PhiloxKey {
  std::uint32_t k0, k1;
};

// One Philox-4x32-10 block: four 32-bit random words for the 128-bit counter (c0..c3).
std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> counter, PhiloxKey key);

// The uniform float in [0, 1) of element `index` of the stream (seed, offset): element i uses
// word i % 4 of the block at counter (offset + i / 4).
float philox_uniform(std::uint64_t seed, std::uint64_t offset, std::uint64_t index);

class SeedSlot;

// A generator hands out disjoint counter ranges: each draw of n numbers advances the offset by
// ceil(n / 4) blocks. Its state (seed, offset) is plain data, saved in checkpoints.
//
// With a seed slot bound (bind_seed_slot), every set_state() also writes the seed into the slot,
// and a draw names the slot, so that kernels on the slot's device read the seed when they run
// (philox::SeedRef). The masks are the same either way; what changes is that work recorded once
// (a captured CUDA graph) draws each batch's masks when the slot is rewritten before it replays.
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}
  struct Draw {
    std::uint64_t seed;
    std::uint64_t offset;
    const std::uint64_t* seed_slot = nullptr;  // the bound slot's address, or null
    Device slot_device = Device::cpu();        // where seed_slot points

    // The seed for work on `device`: read from the slot when the slot lives there, by value
    // otherwise (the slot of another device is not readable from there).
    philox::SeedRef seed_on(Device device) const {
      return {seed, seed_slot != nullptr && slot_device == device ? seed_slot : nullptr};
    }
  };
  Draw reserve(std::uint64_t count);
  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_; }
  void set_state(std::uint64_t seed, std::uint64_t offset);

  // Binds `slot` (null unbinds) and writes the current seed into it.
  void bind_seed_slot(std::shared_ptr<SeedSlot> slot);
  const std::shared_ptr<SeedSlot>& seed_slot() const { return slot_; }

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
  std::shared_ptr<SeedSlot> slot_;
};

}  // namespace attnlab
