// The vectorized dropout mask of the CPU kernels (cpu/philox_mask.h) against philox::uniform
// drawn element by element.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "attnlab/philox.h"
#include "cpu/philox_mask.h"

using namespace attnlab;

namespace {

std::vector<std::uint8_t> reference(std::uint64_t seed, std::uint64_t offset, double p, std::uint64_t begin,
                                    std::int64_t n) {
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    const float u = philox::uniform(seed, offset, begin + static_cast<std::uint64_t>(k));
    keep[static_cast<std::size_t>(k)] = static_cast<double>(u) >= p ? 1 : 0;
  }
  return keep;
}

std::vector<std::uint8_t> vectorized(std::uint64_t seed, std::uint64_t offset, double p, std::uint64_t begin,
                                     std::int64_t n) {
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(n), 7);
  cpu::philox_keep(seed, offset, p, begin, n, keep.data());
  return keep;
}

}  // namespace

TEST_CASE("philox_keep equals philox::uniform >= p at every start, length and rate") {
  // Starts and lengths inside, across and beyond one 64-element group; seeds with both key words.
  const std::uint64_t seeds[] = {1, 0x9E3779B97F4A7C15ull};
  const std::uint64_t offsets[] = {0, 5, (1ull << 32) - 3};  // the last carries into the high word
  const std::uint64_t begins[] = {0, 1, 3, 63, 64, 130};
  const std::int64_t lengths[] = {1, 4, 5, 63, 64, 65, 200};
  const double rates[] = {0.0, 0.1, 0.3, 0.5, 0.9};
  for (auto seed : seeds)
    for (auto offset : offsets)
      for (auto begin : begins)
        for (auto n : lengths)
          for (auto p : rates) {
            CAPTURE(seed);
            CAPTURE(offset);
            CAPTURE(begin);
            CAPTURE(n);
            CAPTURE(p);
            REQUIRE(vectorized(seed, offset, p, begin, n) == reference(seed, offset, p, begin, n));
          }
}

TEST_CASE("philox_keep decides at the rate's exact 24-bit threshold") {
  // p = m / 2^24 keeps exactly the words with (w >> 8) >= m; p just above drops those equal to m.
  const std::int64_t n = 4096;
  for (double p : {3.0 / 16777216.0, 0.25, 0.25 + 1e-12, 8388607.0 / 16777216.0}) {
    CAPTURE(p);
    CHECK(vectorized(7, 11, p, 0, n) == reference(7, 11, p, 0, n));
  }
  // Rate 0 keeps everything; the share kept at 0.3 is near 0.7 (known value, 4096 draws).
  const auto all = vectorized(3, 0, 0.0, 0, n);
  for (auto k : all) REQUIRE(k == 1);
  std::int64_t kept = 0;
  for (auto k : vectorized(3, 0, 0.3, 0, n)) kept += k;
  CHECK(static_cast<double>(kept) / n == doctest::Approx(0.7).epsilon(0.05));
}

TEST_CASE("philox_keep writes nothing outside its n bytes") {
  std::vector<std::uint8_t> buffer(100, 9);
  cpu::philox_keep(5, 0, 0.5, 61, 10, buffer.data() + 20);
  for (int k = 0; k < 20; ++k) CHECK(buffer[static_cast<std::size_t>(k)] == 9);
  for (int k = 30; k < 100; ++k) CHECK(buffer[static_cast<std::size_t>(k)] == 9);
  cpu::philox_keep(5, 0, 0.5, 61, 0, buffer.data());
  CHECK(buffer[0] == 9);
}
