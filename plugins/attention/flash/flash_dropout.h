#pragma once
// Which attention weights the flash kernels drop, shared by the CPU path and the CUDA kernels so
// that both drop the same weights. Weight (b, h, i, j) of the [B, H, Tq, Tk] weights tensor is
// element ((b H + h) Tq + i) Tk + j of the Philox stream (seed, offset), numbered exactly as
// attnlab::dropout() numbers the elements of that tensor: it is kept when its uniform is >= p.
// No fmt here: nvcc compiles this file.
#include "attnlab/device_std.h"

#include "attnlab/philox.h"

namespace attnlab::flash {

struct DropoutStream {
  double p = 0.0;  // drop probability; 0: nothing is dropped
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  // Where the seed is read when the kernel runs (device memory; the host's on the CPU), instead
  // of `seed`: a captured graph's replays then draw the seed written there before each replay.
  const std::uint64_t* seed_slot = nullptr;

  ATTNLAB_HOST_DEVICE std::uint64_t seed_now() const { return philox::SeedRef{seed, seed_slot}.get(); }
};

// Keeps the four words of the last Philox block, so that consecutive weights (four share a
// block) cost one block: weights are usually asked for in increasing index order.
struct KeepCache {
  std::uint64_t block = ~std::uint64_t{0};
  std::uint32_t words[4] = {0u, 0u, 0u, 0u};
};

ATTNLAB_HOST_DEVICE std::uint64_t weight_index(std::uint64_t bh, std::uint64_t i, std::uint64_t j, std::uint64_t tq,
                                               std::uint64_t tk) {
  return (bh * tq + i) * tk + j;
}

// True when weight `index` is kept. The comparison is the one attnlab::dropout makes: the float
// uniform, widened to double, against p.
ATTNLAB_HOST_DEVICE bool keep_weight(const DropoutStream& d, std::uint64_t index, KeepCache& cache) {
  const std::uint64_t block = d.offset + index / 4;
  if (block != cache.block) {
    // The slot is read with each new block (every fourth weight, beside ten Philox rounds).
    philox::block_words(d.seed_now(), block, cache.words);
    cache.block = block;
  }
  const unsigned r = static_cast<unsigned>(index % 4);
  // Selects without indexing the array by a variable (which would put it in local memory on a GPU).
  const std::uint32_t word = r == 0 ? cache.words[0] : r == 1 ? cache.words[1] : r == 2 ? cache.words[2] : cache.words[3];
  return static_cast<double>(philox::word_to_uniform(word)) >= d.p;
}

// What dropout multiplies softmax weight `index` (of value p) by: keep_scale = 1 / (1 - d.p) when
// the weight is kept, 0 when it is dropped, 1 without dropout. A weight of 0 stays 0 whatever the
// factor, so it draws nothing and gets 1. The forward keeps p times this; the backward's
// d(dropped weight) / d(weight) is this.
template <typename T>
ATTNLAB_HOST_DEVICE T drop_factor(const DropoutStream& d, T p, T keep_scale, std::uint64_t index, KeepCache& cache) {
  if (d.p > 0.0 && p != T(0)) return keep_weight(d, index, cache) ? keep_scale : T(0);
  return T(1);
}

}  // namespace attnlab::flash
