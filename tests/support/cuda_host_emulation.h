#pragma once
// A host emulation of the small part of the CUDA device API that kernels written against
// flash_device.cuh use, so that their device code runs, and is checked against the CPU reference,
// on machines without a GPU: every CUDA thread of a block is a std::thread, __syncthreads() is a
// std::barrier over the block, __shfl_xor_sync an exchange through a per-warp barrier, and
// __nv_bfloat16 rounds to nearest even as the device does. Index arithmetic, shared-memory
// layout, barrier placement, row-group reductions and bf16 rounding are exercised; timing,
// memory coalescing and bank conflicts are not.
//
// Blocks run one after another, so one buffer serves as every block's dynamic shared memory: the
// including file defines the kernels' `extern __shared__ float smem[]` (a namespace-scope array
// of the kernels' namespace) large enough for the biggest kernel.
//
// Include this before the kernel headers, never together with a real CUDA header.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

// bf16 storage with the device's conversions (round to nearest even; NaN stays NaN).
struct __nv_bfloat16 {
  std::uint16_t bits = 0;
};
inline float __bfloat162float(__nv_bfloat16 x) {
  const std::uint32_t u = static_cast<std::uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
    return {static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  return {static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

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

}  // namespace cuda_host_emulation

inline void __syncthreads() { cuda_host_emulation::current->barrier.arrive_and_wait(); }

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
