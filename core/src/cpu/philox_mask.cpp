#include "cpu/philox_mask.h"

#include <algorithm>
#include <cmath>

#include "attnlab/philox.h"

// Several instruction-set versions of the block loop on x86-64 with GCC or clang (ifunc dispatch).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__SANITIZE_ADDRESS__)
#define ATTNLAB_PHILOX_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNLAB_PHILOX_CLONES
#endif

namespace attnlab::cpu {
namespace {

constexpr int kLanes = 16;  // blocks per group: 64 mask bytes

// philox::uniform(w) >= p  <=>  (w >> 8) * 2^-24 >= p  <=>  (w >> 8) >= ceil(p * 2^24): both sides
// are scaled by a power of two (exact in double) and w >> 8 is an integer.
std::uint32_t keep_threshold(double p) {
  return p > 0.0 ? static_cast<std::uint32_t>(std::ceil(p * 16777216.0)) : 0u;
}

// out[4 l + w] = [(word w of block first + l) >> 8 >= threshold] for the kLanes blocks from
// `first`: the rounds of philox::rounds, lane by lane (structure of arrays).
ATTNLAB_PHILOX_CLONES void keep_group(std::uint64_t seed, std::uint64_t first, std::uint32_t threshold,
                                      std::uint8_t* out) {
  constexpr std::uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint64_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  // Each word in a 64-bit lane (upper half zero), so that a round is 64-bit vector arithmetic:
  // the 32 x 32 -> 64 products are vector multiplies of the even 32-bit halves.
  std::uint64_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const std::uint64_t block = first + static_cast<std::uint64_t>(l);
    c0[l] = block & 0xFFFFFFFFu;
    c1[l] = block >> 32;
    c2[l] = 0u;
    c3[l] = 0u;
  }
  std::uint64_t k0 = seed & 0xFFFFFFFFu, k1 = seed >> 32;
  for (int round = 0; round < 10; ++round) {
    for (int l = 0; l < kLanes; ++l) {
      const std::uint64_t p0 = kM0 * (c0[l] & 0xFFFFFFFFu);
      const std::uint64_t p1 = kM1 * (c2[l] & 0xFFFFFFFFu);
      const std::uint64_t n0 = (p1 >> 32) ^ c1[l] ^ k0;
      const std::uint64_t n2 = (p0 >> 32) ^ c3[l] ^ k1;
      c1[l] = p1 & 0xFFFFFFFFu;
      c3[l] = p0 & 0xFFFFFFFFu;
      c0[l] = n0;
      c2[l] = n2;
    }
    k0 = (k0 + kW0) & 0xFFFFFFFFu;
    k1 = (k1 + kW1) & 0xFFFFFFFFu;
  }
  for (int l = 0; l < kLanes; ++l) {
    out[4 * l + 0] = (c0[l] >> 8) >= threshold ? 1 : 0;
    out[4 * l + 1] = (c1[l] >> 8) >= threshold ? 1 : 0;
    out[4 * l + 2] = (c2[l] >> 8) >= threshold ? 1 : 0;
    out[4 * l + 3] = (c3[l] >> 8) >= threshold ? 1 : 0;
  }
}

}  // namespace

void philox_keep(std::uint64_t seed, std::uint64_t offset, double p, std::uint64_t begin, std::int64_t n,
                 std::uint8_t* keep) {
  if (n <= 0) return;
  const std::uint32_t threshold = keep_threshold(p);
  constexpr std::uint64_t kGroup = 4 * kLanes;  // elements per group
  // Groups are aligned to the element index, not to `begin`: element i sits at byte i % kGroup of
  // the group that starts at element i - i % kGroup (block offset + that / 4).
  std::uint8_t words[kGroup];
  std::uint64_t i = begin;
  const std::uint64_t end = begin + static_cast<std::uint64_t>(n);
  while (i < end) {
    const std::uint64_t start = i - i % kGroup;
    keep_group(seed, offset + start / 4, threshold, words);
    const std::uint64_t stop = std::min(end, start + kGroup);
    std::copy(words + (i - start), words + (stop - start), keep + (i - begin));
    i = stop;
  }
}

}  // namespace attnlab::cpu
