#include <doctest/doctest.h>

#include "attnlab/random.h"

using namespace attnlab;

// Known-answer vectors of Philox-4x32-10 from the Random123 distribution (kat_vectors).
TEST_CASE("philox4x32-10 matches the Random123 known answers") {
  using W = std::array<std::uint32_t, 4>;
  CHECK(philox4x32({0, 0, 0, 0}, {0, 0}) == W{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}) ==
        W{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  CHECK(philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}) ==
        W{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("uniforms lie in the unit interval and depend only on seed offset and index") {
  double total = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = philox_uniform(42, 0, static_cast<std::uint64_t>(i));
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    total += u;
  }
  CHECK(total / n == doctest::Approx(0.5).epsilon(0.01));
  CHECK(philox_uniform(42, 3, 17) == philox_uniform(42, 3, 17));
  CHECK(philox_uniform(42, 3, 17) != philox_uniform(43, 3, 17));
  // Element i of offset o is element i + 4 of offset o - 1.
  CHECK(philox_uniform(42, 3, 1) == philox_uniform(42, 2, 5));
}

TEST_CASE("a generator hands out disjoint counter ranges") {
  Generator g(9);
  auto a = g.reserve(10);  // 3 blocks
  auto b = g.reserve(1);
  CHECK(a.offset == 0);
  CHECK(b.offset == 3);
  CHECK(g.offset() == 4);
  CHECK(a.seed == 9);
}
