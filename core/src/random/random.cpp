#include "attnlab/random.h"

#include <utility>

#include "attnlab/seed_slot.h"
#include "random/philox.h"

namespace attnlab {

std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> c, PhiloxKey key) {
  philox::rounds(c.data(), key.k0, key.k1);
  return c;
}

float philox_uniform(std::uint64_t seed, std::uint64_t offset, std::uint64_t index) {
  return philox::uniform(seed, offset, index);
}

Generator::Draw Generator::reserve(std::uint64_t count) {
  Draw draw{seed_, offset_};
  if (slot_) draw.seed_slot = slot_->address(), draw.slot_device = slot_->device();
  offset_ += (count + 3) / 4;
  return draw;
}

void Generator::set_state(std::uint64_t seed, std::uint64_t offset) {
  seed_ = seed, offset_ = offset;
  if (slot_) slot_->write(seed);
}

void Generator::bind_seed_slot(std::shared_ptr<SeedSlot> slot) {
  slot_ = std::move(slot);
  if (slot_) slot_->write(seed_);
}

}  // namespace attnlab
