#pragma once
// Philox-4x32-10 as a header both compilers read: random.cpp (host), dropout_cuda.cu (device) and
// plugins that fuse dropout into their kernels use these same functions, so a dropout mask is
// bit-identical on every backend. Public, and without fmt: nvcc compiles this file.
#include "attnlab/device_std.h"

#include "attnlab/host_device.h"

namespace attnlab::philox {

// The seed of a stream, given by value or read from memory when the work runs. A kernel that a
// captured CUDA graph replays keeps its arguments from the capture; a seed read from `slot` (memory
// of the device that runs the work, the host's for the CPU backend) can change between replays.
// Kernels read it once, before they draw.
struct SeedRef {
  std::uint64_t value = 0;
  const std::uint64_t* slot = nullptr;  // null: use `value`

  ATTNLAB_HOST_DEVICE std::uint64_t get() const { return slot != nullptr ? *slot : value; }
};

// Ten rounds on the counter c[0..3] in place with key (k0, k1), constants of Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3" (SC 2011): two 32x32->64 multiplies per round,
// the key bumped by the Weyl constants between rounds.
ATTNLAB_HOST_DEVICE void rounds(std::uint32_t c[4], std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c[2];
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const std::uint32_t n1 = static_cast<std::uint32_t>(p1);
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    const std::uint32_t n3 = static_cast<std::uint32_t>(p0);
    c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
    k0 += kW0;
    k1 += kW1;
  }
}

// The four words of the block at counter `block` of stream `seed`.
ATTNLAB_HOST_DEVICE void block_words(std::uint64_t seed, std::uint64_t block, std::uint32_t words[4]) {
  words[0] = static_cast<std::uint32_t>(block);
  words[1] = static_cast<std::uint32_t>(block >> 32);
  words[2] = 0u;
  words[3] = 0u;
  rounds(words, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// 24 random bits -> [0, 1), exactly representable in float.
ATTNLAB_HOST_DEVICE float word_to_uniform(std::uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

// Element `index` of the stream (seed, offset): word index % 4 of the block offset + index / 4.
ATTNLAB_HOST_DEVICE float uniform(std::uint64_t seed, std::uint64_t offset, std::uint64_t index) {
  std::uint32_t words[4];
  block_words(seed, offset + index / 4, words);
  return word_to_uniform(words[index % 4]);
}

}  // namespace attnlab::philox
