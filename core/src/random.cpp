#include "attnlab/random.h"

#include "philox.h"

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
  offset_ += (count + 3) / 4;
  return draw;
}

}  // namespace attnlab
