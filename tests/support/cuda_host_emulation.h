#pragma once
// A host emulation of the small part of the CUDA device API that kernels written against
// flash_device.cuh use, so that their device code runs, and is checked against the CPU reference,
// on machines without a GPU: every CUDA thread of a block is a fiber (cuda_host_threads.h),
// __syncthreads() a barrier over the block, __shfl_xor_sync an exchange through a per-warp barrier, and
// __nv_bfloat16 rounds to nearest even as the device does. Index arithmetic, shared-memory
// layout, barrier placement, row-group reductions and bf16 rounding are exercised; timing,
// memory coalescing and bank conflicts are not.
//
// nvcuda::wmma (the 16x16x16 fragments of the tensor-core kernels) is emulated too: each lane
// holds a private copy of the whole tile (the device spreads it over the warp in an order that is
// the compiler's business: the emulated fragments have no element access, so code that indexes
// fragment elements does not compile here). load_matrix_sync, store_matrix_sync and mma_sync are
// warp collectives: every lane of the warp must call the same ones in the same order, or the run
// aborts with a message at the warp's next __syncwarp or __syncthreads, where the lanes compare
// the collectives each called. They order no memory among the lanes, as on the device: each lane
// loads when it gets there and lane 0 writes a store when it gets there, so a tile one lane writes
// and another loads still needs __syncwarp() or __syncthreads() in between; a missing one is a
// race here that may or may not change a result (the emulation cannot be relied on to find it:
// review the barriers). The pointer alignment (256 bits) and the ldm rules (a multiple of 8
// elements for bf16, 4 for f32)
// are checked on every call.
//
// Blocks run one after another, so one buffer serves as every block's dynamic shared memory: the
// including file defines the kernels' `extern __shared__ float smem[]` (a namespace-scope array
// of the kernels' namespace) large enough for the biggest kernel.
//
// Include this before the kernel headers, never together with a real CUDA header.
#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

// 16 bytes, for vector copies of bf16 rows (may_alias: the kernels read bf16 arrays through it).
struct __attribute__((may_alias, aligned(16))) uint4 {
  unsigned x, y, z, w;
};

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

#include "cuda_host_threads.h"

#include "cuda_host_bits.h"

namespace cuda_host_emulation {

template <typename T>
void check_tile_access(const T* p, unsigned ldm) {
  if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0) fail("wmma pointer not 256-bit aligned");
  if ((ldm * sizeof(T)) % 16 != 0) fail("wmma ldm not a multiple of 16 bytes");
}

inline float widen(float x) { return x; }
inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

}  // namespace cuda_host_emulation

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

// One lane's copy of a whole tile: matrix_a is M x K, matrix_b K x N, accumulator M x N, kept
// row-major in `tile_` (for the functions below only; kernels never index fragments).
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulation serves 16x16x16 fragments");
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
  T tile_[rows * cols];
};

// Element-wise on the lane's registers on the device: not a collective.
template <typename Use, int M, int N, int K, typename T, typename Layout, typename V>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const V& value) {
  for (auto& x : f.tile_) x = value;
}

// matrix_a / matrix_b: the layout is the fragment's. Element (r, c) of the tile is p[r * ldm + c]
// row-major, p[r + c * ldm] column-major.
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>);
  using F = fragment<Use, M, N, K, T, Layout>;
  cuda_host_emulation::check_tile_access(p, ldm);
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.tile_[r * F::cols + c] = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[r + c * ldm];
  cuda_host_emulation::warp_collective(1);
}

// The accumulator: the layout is the call's.
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm,
                             layout_t layout) {
  cuda_host_emulation::check_tile_access(p, ldm);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.tile_[r * 16 + c] = layout == mem_row_major ? p[r * ldm + c] : p[r + c * ldm];
  cuda_host_emulation::warp_collective(2);
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm,
                              layout_t layout) {
  cuda_host_emulation::check_tile_access(p, ldm);
  cuda_host_emulation::warp_collective(3);
  if (threadIdx.x % 32 != 0) return;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) (layout == mem_row_major ? p[r * ldm + c] : p[r + c * ldm]) = f.tile_[r * 16 + c];
}

// d = a b + c: exact products, f32 sums (in k order; the device's order is its own).
template <typename T, typename LA, typename LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, T, LA>& a,
              const fragment<matrix_b, 16, 16, 16, T, LB>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  float out[256];
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float s = c.tile_[r * 16 + n];
      for (int k = 0; k < 16; ++k)
        s += cuda_host_emulation::widen(a.tile_[r * 16 + k]) * cuda_host_emulation::widen(b.tile_[k * 16 + n]);
      out[r * 16 + n] = s;
    }
  std::memcpy(d.tile_, out, sizeof out);
  cuda_host_emulation::warp_collective(4);
}

}  // namespace nvcuda::wmma
