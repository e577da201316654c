#pragma once
// Dropout's keep mask on the CPU, many Philox blocks at a time: philox.h computes one block of
// four words per call, a chain of 10 dependent rounds the compiler cannot vectorize, and over
// the activations of a training step those calls cost more than the layer norms they feed.
// Here 16 blocks advance through the rounds side by side in plain loops that the compiler turns
// into vector multiplies (compiled for AVX-512, AVX2 and baseline x86-64, the loader picks
// one). The words are those of philox::block_words, so the mask is bit for bit the one
// philox::uniform draws element by element, on every CPU and on the GPU.
#include <cstdint>

namespace attnlab::cpu {

// keep[k] = [philox::uniform(seed, offset, begin + k) >= p] for 0 <= k < n, as 0 or 1;
// 0 <= p < 1. Element i is word i % 4 of the block at counter offset + i / 4.
void philox_keep(std::uint64_t seed, std::uint64_t offset, double p, std::uint64_t begin, std::int64_t n,
                 std::uint8_t* keep);

}  // namespace attnlab::cpu
