#pragma once
// The thread machinery of the host emulation of CUDA (cuda_host_emulation.h, and
// cuda_sm90_host_emulation.h for the Hopper kernel): every CUDA thread of a block is a std::thread,
// __syncthreads() a std::barrier over the block, __syncwarp() one over the warp, __shfl_xor_sync
// an exchange through the warp's barrier; blocks run one after another. The barriers also compare
// the warp collectives each lane has called (warp_collective), as the device requires them to
// be the same. Needs dim3 and uint3: the emulated ones of cuda_host_emulation.h or CUDA's own
// (the real headers compiled for the host, as CuTe includes them).
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace cuda_host_emulation {

struct Block {
  explicit Block(unsigned threads) : barrier(threads), exchange(threads) {
    for (unsigned w = 0; w < (threads + 31) / 32; ++w) {
      const unsigned lanes = threads - 32 * w < 32 ? threads - 32 * w : 32;
      warps.push_back(std::make_unique<std::barrier<>>(lanes));
    }
  }
  std::barrier<> barrier;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<float> exchange;  // one slot per thread, for shuffles
  // Per lane: a running record (hash) of the wmma collectives it called; two slots to compare
  // them in at barriers, used alternately, and the number of barriers it has passed.
  std::vector<std::uint64_t> collective_record = std::vector<std::uint64_t>(exchange.size(), 0);
  std::vector<std::uint64_t> posted = std::vector<std::uint64_t>(2 * exchange.size(), 0);
  std::vector<unsigned> barriers_passed = std::vector<unsigned>(exchange.size(), 0);
};

inline thread_local Block* current = nullptr;

// Runs body() once per thread of every block of `grid`, blocks one after another, the threads of
// a block concurrently. A thread that returns early leaves the block's and its warp's barriers
// (as an exited thread no longer takes part in __syncthreads on the device).
template <typename Body>
void launch(dim3 grid, unsigned threads, Body body) {
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        Block block(threads);
        std::vector<std::thread> pool;
        pool.reserve(threads);
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            blockIdx = {x, y, z};
            blockDim = dim3(threads);
            gridDim = grid;
            current = &block;
            body();
            block.warps[t / 32]->arrive_and_drop();
            block.barrier.arrive_and_drop();
          });
        for (auto& th : pool) th.join();
      }
}

// A barrier that also checks that every lane of the caller's warp has called the same wmma
// collectives (in the same order) so far, as the device requires of warp collectives. Barriers
// alternate between two slots per lane: a lane cannot reach the barrier after next before every
// lane of its warp has passed the next one, so no slot is overwritten while it is being read.
template <typename Wait>
void checked_barrier(Wait wait) {
  auto& b = *current;
  const unsigned t = threadIdx.x, warp = t / 32;
  const unsigned threads = static_cast<unsigned>(b.exchange.size());
  const unsigned lanes = threads - 32 * warp < 32 ? threads - 32 * warp : 32;
  const unsigned slot = (b.barriers_passed[t]++ % 2) * threads;
  b.posted[slot + t] = b.collective_record[t];
  wait();
  for (unsigned l = 0; l < lanes; ++l)
    if (b.posted[slot + warp * 32 + l] != b.collective_record[t]) {
      std::fprintf(stderr,
                   "cuda_host_emulation: lanes of warp %u of block (%u, %u) called different wmma collectives\n", warp,
                   blockIdx.x, blockIdx.y);
      std::abort();
    }
}

}  // namespace cuda_host_emulation

inline void __syncthreads() {
  cuda_host_emulation::checked_barrier([] { cuda_host_emulation::current->barrier.arrive_and_wait(); });
}

inline void __syncwarp(unsigned = 0xffffffffu) {
  cuda_host_emulation::checked_barrier(
      [] { cuda_host_emulation::current->warps[threadIdx.x / 32]->arrive_and_wait(); });
}

// Every lane of the warp takes part (the kernels call it with the full mask).
inline float __shfl_xor_sync(unsigned, float value, int lane_mask) {
  auto& b = *cuda_host_emulation::current;
  const unsigned t = threadIdx.x, warp = t / 32, lane = t % 32;
  b.exchange[t] = value;
  b.warps[warp]->arrive_and_wait();
  const float other = b.exchange[warp * 32 + (lane ^ static_cast<unsigned>(lane_mask))];
  b.warps[warp]->arrive_and_wait();
  return other;
}

namespace cuda_host_emulation {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "cuda_host_emulation: thread %u of block (%u, %u): %s\n", threadIdx.x, blockIdx.x, blockIdx.y,
               what);
  std::abort();
}

// A warp collective: the lane folds it into its running record of the collectives it called,
// which __syncwarp and __syncthreads compare across the warp.
inline void warp_collective(int which) {
  auto& h = current->collective_record[threadIdx.x];
  h = h * 1000003u + static_cast<std::uint64_t>(which);
}

}  // namespace cuda_host_emulation
