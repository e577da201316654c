#pragma once
// What the CUDA kernels' score expressions read when they run (attnlab/expr/score_expr.h): one
// argument of the kernels holding the tensors' data, the learned tensors' gradient accumulators,
// each batch row's lengths, the queries' first position, and the classes of the kernel's tiles.
// The code generated for a site's expressions (a struct with score, keep and grad, expr/codegen.h)
// reads this struct; nvcc, NVRTC and the host emulation of the kernels all compile it.
#include "attnlab/device_std.h"
#include "attnlab/host_device.h"

namespace attnlab::expr {

// The most tensors one site's expressions may read on CUDA.
inline constexpr int kMaxDeviceTensors = 8;

// A learned tensor's gradient is accumulated in 64-bit fixed point with 32 fractional bits:
// integer additions in any order give one sum, so the gradient does not depend on the order in
// which threads and blocks add their parts (2^-32 per part; sums up to 2^31 in size).
inline constexpr double kFixedPointScale = 4294967296.0;

// A tile's class, as classify_tile gives it (score_kernels.h): removed, kept, mixed.
inline constexpr unsigned char kTileRemoved = 0, kTileKept = 1, kTileMixed = 2;

struct DeviceArgs {
  const float* tensors[kMaxDeviceTensors];   // each tensor's data, f32, row-major
  unsigned long long* grads[kMaxDeviceTensors];  // a learned tensor's fixed-point gradient, or null
  const int* q_len;   // [B]: each batch row's unpadded query length
  const int* kv_len;  // [B]: and key length
  int q_offset;       // q_idx of query 0
  // Tile classes [by_b ? B : 1][by_h ? H : 1][tiles_q][tiles_k] for tiles of tile_rows queries by
  // tile_cols keys; null: every tile is kept (no mask_mod).
  const unsigned char* tiles;
  int tile_rows, tile_cols, tiles_q, tiles_k;
  int by_b, by_h, heads;
};

// The class of the tile holding query i and key j of batch row b, head h.
ATTNLAB_HOST_DEVICE unsigned char tile_class(const DeviceArgs& a, std::int64_t b, std::int64_t h, std::int64_t i,
                                              std::int64_t j) {
  if (!a.tiles) return kTileKept;
  const std::int64_t group = (a.by_b ? b : 0) * (a.by_h ? a.heads : 1) + (a.by_h ? h : 0);
  return a.tiles[(group * a.tiles_q + i / a.tile_rows) * a.tiles_k + j / a.tile_cols];
}

// x in fixed point (kFixedPointScale), rounded to nearest, as the accumulators add it.
ATTNLAB_HOST_DEVICE unsigned long long to_fixed_point(float x) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned long long>(__double2ll_rn(static_cast<double>(x) * kFixedPointScale));
#else
  return static_cast<unsigned long long>(std::llrint(static_cast<double>(x) * kFixedPointScale));
#endif
}

// The expressions of a kernel without any: the score unchanged, every key kept, the gradient
// passed through. Kernels test kAny and compile none of it for this one.
struct NoExpressions {
  static constexpr bool kAny = false, kScore = false, kMask = false, kLearns = false;
  ATTNLAB_HOST_DEVICE static float score(float s, const DeviceArgs&, int, int, int, int) { return s; }
  ATTNLAB_HOST_DEVICE static bool keep(const DeviceArgs&, int, int, int, int) { return true; }
  ATTNLAB_HOST_DEVICE static float grad(float, float g, const DeviceArgs&, int, int, int, int, bool) { return g; }
};

}  // namespace attnlab::expr
