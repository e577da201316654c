#pragma once
// Relative positions' value terms in the Hopper forward: out_i = sum_j P_ij Z_ij (v_j + V_r(i,j)),
// V [2 clip + 1, D] the bucket values and r(i, j) the distance bucket (attnlab/plugin/
// kernel_term_math.h). P V runs on the warpgroup MMA as without them; the bucket part is
// sum_r W_ir V_r, W_ir the kept weight of query i's keys in bucket r, gathered over the walk:
//   - an inner bucket (0 < r < 2 clip) holds exactly one key, j = p + r - clip: the thread that
//     holds (i, j) stores its score (log2 units, -inf when dropout drops it) in shared memory
//     [128 queries][2 clip + 1], and the end turns it into exp2(s - m) under the final maximum;
//   - the two clipped buckets (r = 0: j - p <= -clip, r = 2 clip: j - p >= clip) hold runs of
//     keys: each thread sums their kept weights in two registers per row, rescaled with O by
//     exp(m_old - m_new), added over the row's four threads at the end.
// Include after flash_sm90_device.cuh.
#include "flash_sm90_device.cuh"

namespace attnlab::flash::cuda::sm90 {

// What one thread carries for the value terms of its kRows rows.
template <int kRows>
struct ValueTerms {
  float* inner;               // shared (kBlockM, buckets): the inner buckets' scores, -inf where unseen
  int clip, buckets;          // value_clip, 2 clip + 1
  float clipped[kRows][2];    // the clipped buckets' kept weights, under the running maximum

  // Every thread of the block calls it before the walk (its first barrier publishes the -inf).
  __device__ __forceinline__ void start(float* smem, std::int64_t value_clip) {
    inner = smem;
    clip = static_cast<int>(value_clip);
    buckets = 2 * clip + 1;
    for (int e = threadIdx.x; e < kBlockM * buckets; e += kThreads) inner[e] = -INFINITY;
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) clipped[r][0] = clipped[r][1] = 0.0f;
  }
  // j - p of a key tile's first key, clamped so that j - p of the tile's keys stays in int and
  // keeps its bucket: at most clip, at least -(kBlockN + clip).
  __device__ __forceinline__ int first_distance(std::int64_t j0, std::int64_t p) const {
    const std::int64_t d = j0 - p;
    return d > clip ? clip : (d < -(kBlockN + clip) ? -(kBlockN + clip) : static_cast<int>(d));
  }
  // Key at distance d0 + col of row r (block row `row`), score s (log2 units), its weight w under
  // the running maximum and what dropout kept of it.
  __device__ __forceinline__ void take(int r, int row, int distance, float s, float w, float kept) {
    if (distance <= -clip) clipped[r][0] += kept;
    else if (distance >= clip) clipped[r][1] += kept;
    else inner[row * buckets + distance + clip] = (kept == 0.0f && w != 0.0f) ? -INFINITY : s;
  }
  __device__ __forceinline__ void rescale(int r, float alpha) {
    clipped[r][0] *= alpha;
    clipped[r][1] *= alpha;
  }
  // Adds sum_r W_ir V_r to the unnormalised output O (rows x columns, block coordinates rcO) of
  // rows with maximum m and denominator l; `keep` scales kept weights (1 / (1 - p), 1 without
  // dropout). Every thread calls it (the row sums are warp shuffles).
  template <class TensorO, class CoordO>
  __device__ __forceinline__ void finish(TensorO& O, const CoordO& rcO, const float* m, const float* l,
                                         const __nv_bfloat16* __restrict__ values, int d, float keep) {
    __syncthreads();  // every inner score is in
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const float left = kernels::group_sum(clipped[r][0]), right = kernels::group_sum(clipped[r][1]);
      if (!(l[r] > 0.0f)) continue;  // a row that sees no key gives 0
      const int row = cute::get<0>(rcO(r, 0));
      // Under clip 0 both runs are bucket 0, which is also the last.
      const __nv_bfloat16* last = values + static_cast<std::int64_t>(buckets - 1) * d;
      CUTE_UNROLL
      for (int c = 0; c < cute::size<1>(O); ++c) {
        const int col = cute::get<1>(rcO(r, c));
        O(r, c) += left * kernels::to_float(values[col]) + right * kernels::to_float(last[col]);
      }
      for (int bucket = 1; bucket + 1 < buckets; ++bucket) {
        const float s = inner[row * buckets + bucket];
        if (s == -INFINITY) continue;
        const float w = exp2f(s - m[r]) * keep;
        const __nv_bfloat16* v = values + static_cast<std::int64_t>(bucket) * d;
        CUTE_UNROLL
        for (int c = 0; c < cute::size<1>(O); ++c) O(r, c) += w * kernels::to_float(v[cute::get<1>(rcO(r, c))]);
      }
    }
  }
};

}  // namespace attnlab::flash::cuda::sm90
