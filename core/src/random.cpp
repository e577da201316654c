#include "attnlab/random.h"

namespace attnlab {

// Philox-4x32-10 with the constants of Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3" (SC 2011): ten rounds of two 32x32->64 multiplies, the key bumped by the Weyl
// constants between rounds.
std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> c, PhiloxKey key) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ key.k0, static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ key.k1, static_cast<std::uint32_t>(p0)};
    key.k0 += kW0;
    key.k1 += kW1;
  }
  return c;
}

float philox_uniform(std::uint64_t seed, std::uint64_t offset, std::uint64_t index) {
  const std::uint64_t block = offset + index / 4;
  const auto words = philox4x32({static_cast<std::uint32_t>(block),
                                 static_cast<std::uint32_t>(block >> 32), 0u, 0u},
                                {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
  // 24 random bits -> [0, 1) exactly representable in float.
  return static_cast<float>(words[index % 4] >> 8) * (1.0f / 16777216.0f);
}

Generator::Draw Generator::reserve(std::uint64_t count) {
  Draw draw{seed_, offset_};
  offset_ += (count + 3) / 4;
  return draw;
}

}  // namespace attnlab
