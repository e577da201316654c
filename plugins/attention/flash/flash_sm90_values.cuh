#pragma once
// Relative positions' value terms in the Hopper kernels. Forward: out_i = sum_j P_ij Z_ij (v_j + V_r(i,j)),
// V [2 clip + 1, D] the bucket values and r(i, j) the distance bucket (attnlab/plugin/
// kernel_term_math.h). P V runs on the warpgroup MMA as without them; the bucket part is
// sum_r W_ir V_r, W_ir the kept weight of query i's keys in bucket r, gathered over the walk:
//   - an inner bucket (0 < r < 2 clip) holds exactly one key, j = p + r - clip: the thread that
//     holds (i, j) stores its score (log2 units, -inf when dropout drops it) in shared memory
//     [128 queries][2 clip + 1], and the end turns it into exp2(s - m) under the final maximum;
//   - the two clipped buckets (r = 0: j - p <= -clip, r = 2 clip: j - p >= clip) hold runs of
//     keys: each thread sums their kept weights in two registers per row, rescaled with O by
//     exp(m_old - m_new), added over the row's four threads at the end.
// Backward: dP_ij = (dout_i . (v_j + V_r)) Z_ij, so dP gains u_ir = dout_i . V_r (bucket_dots_kernel,
// before the other kernels: u [rows, 2 clip + 1] in f32); both backward kernels add u at each
// pair's bucket (an inner bucket's from global memory, the clipped ones' kept per row). The bucket
// values' gradient is sum_i W_ir dout_i with W_ir = sum_{j in r} P_ij Z_ij: dq_kernel gathers W of
// its 128 queries as the forward does (inner buckets in shared memory, clipped ones in registers)
// and writes its block's share, sum over its queries of W_ir dout_i; the FMA path's
// bucket_values_grad_kernel adds the shares up in block order (deterministic, no atomics).
#include "flash_sm90_device.cuh"

namespace attnlab::flash::cuda::sm90 {

// j - p of a tile's first key, clamped so that j - p of the tile's keys (up to kBlockN of them)
// stays in int and keeps its bucket: at most clip, at least -(kBlockN + clip).
__device__ __forceinline__ int clamped_distance(std::int64_t j0, std::int64_t p, int clip) {
  const std::int64_t d = j0 - p;
  return d > clip ? clip : (d < -(kBlockN + clip) ? -(kBlockN + clip) : static_cast<int>(d));
}

// What one thread gathers per distance bucket of its kRows rows: an inner bucket's one entry in
// shared memory [kBlockM rows][buckets] (`fill` where no key was seen), the two clipped buckets'
// runs summed in registers. The forward and dq_kernel gather the value terms' weights with it.
template <int kRows>
struct BucketGather {
  float* inner;             // shared (kBlockM, buckets)
  int clip, buckets;        // value_clip, 2 clip + 1
  float clipped[kRows][2];  // this thread's sums of the runs r = 0 and r = 2 clip

  // Every thread of the block calls it before the walk (its first barrier publishes the fill).
  __device__ __forceinline__ void start(float* smem, std::int64_t value_clip, float fill) {
    inner = smem;
    clip = static_cast<int>(value_clip);
    buckets = 2 * clip + 1;
    for (int e = threadIdx.x; e < kBlockM * buckets; e += kThreads) inner[e] = fill;
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) clipped[r][0] = clipped[r][1] = 0.0f;
  }
  // A key at `distance` (j - p) of row r (block row `row`): `run` joins a clipped bucket's sum,
  // `entry` is stored as an inner bucket's.
  __device__ __forceinline__ void take(int r, int row, int distance, float run, float entry) {
    if (distance <= -clip) clipped[r][0] += run;
    else if (distance >= clip) clipped[r][1] += run;
    else inner[row * buckets + distance + clip] = entry;
  }
  // Row r's two runs over its four threads (a warp shuffle: every thread calls it).
  __device__ __forceinline__ void run_sums(int r, float& low, float& high) const {
    low = kernels::group_sum(clipped[r][0]);
    high = kernels::group_sum(clipped[r][1]);
  }
};

// The forward's value terms: the inner buckets' scores (log2 units, -inf where unseen or dropped)
// and the clipped buckets' kept weights under the running maximum.
template <int kRows>
struct ValueTerms : BucketGather<kRows> {
  using Base = BucketGather<kRows>;
  using Base::buckets;
  using Base::clipped;
  using Base::inner;

  __device__ __forceinline__ void start(float* smem, std::int64_t value_clip) {
    Base::start(smem, value_clip, -INFINITY);
  }
  // Score s (log2 units) of a key at `distance`, its weight w under the running maximum and what
  // dropout kept of it.
  __device__ __forceinline__ void take(int r, int row, int distance, float s, float w, float kept) {
    Base::take(r, row, distance, kept, (kept == 0.0f && w != 0.0f) ? -INFINITY : s);
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
      float left, right;
      this->run_sums(r, left, right);
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

// u [rows, buckets] = dout [rows, D] . V^T (f32), a warp per row; rows are the B * H * Tq query
// rows. Grid: kernels::delta_grid(rows) of kernels::kThreads threads.
template <int D>
__global__ void __launch_bounds__(kernels::kThreads)
    bucket_dots_kernel(const __nv_bfloat16* __restrict__ dout,    // (rows, D)
                       const __nv_bfloat16* __restrict__ values,  // (buckets, D)
                       std::int64_t rows, int buckets,
                       float* __restrict__ u) {                    // (rows, buckets)
  static_assert(D % 32 == 0, "a lane holds D / 32 elements of the row");
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kernels::kThreads / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // the same for every lane of the warp
  float x[D / 32];
  CUTE_UNROLL
  for (int e = 0; e < D / 32; ++e) x[e] = kernels::to_float(dout[row * D + lane + 32 * e]);
  for (int r = 0; r < buckets; ++r) {
    const __nv_bfloat16* v = values + static_cast<std::int64_t>(r) * D + lane;
    float s = 0.0f;
    CUTE_UNROLL
    for (int e = 0; e < D / 32; ++e) s += x[e] * kernels::to_float(v[32 * e]);
    CUTE_UNROLL
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) u[row * buckets + r] = s;
  }
}

// A query's row of u with its two clipped entries at hand: the dP term of a key at distance
// j - p. Null row (a query past Tq): never asked.
struct BucketDots {
  const float* row;
  float low, high;
  int clip;

  __device__ __forceinline__ void load(const float* u, std::int64_t query_row, int value_clip, bool valid) {
    const int buckets = 2 * value_clip + 1;
    clip = value_clip;
    row = valid ? u + query_row * buckets : nullptr;
    low = valid ? row[0] : 0.0f;
    high = valid ? row[buckets - 1] : 0.0f;
  }
  __device__ __forceinline__ float at(int distance) const {
    return distance <= -clip ? low : (distance >= clip ? high : row[distance + clip]);
  }
};

// What one thread of dq_kernel carries for the value terms of its kRows query rows: their u and
// their weights W_ir (inner buckets in shared memory [kBlockM][buckets], zero where no key was
// seen; the clipped ones summed in registers).
template <int kRows>
struct BackwardValueTerms : BucketGather<kRows> {
  using Base = BucketGather<kRows>;
  using Base::buckets;
  using Base::inner;
  BucketDots dots[kRows];

  // Every thread calls it before the walk (its first barrier publishes the zeros). `rows[r]`: the
  // block row of row r.
  __device__ __forceinline__ void start(float* smem, const float* u, std::int64_t value_clip, std::int64_t bh,
                                        std::int64_t tq, std::int64_t i0, const int* rows) {
    Base::start(smem, value_clip, 0.0f);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t i = i0 + rows[r];
      dots[r].load(u, bh * tq + i, static_cast<int>(value_clip), i < tq);
    }
  }
  // The kept weight pz = P_ij Z_ij of row r (block row `row`) and a key at `distance`.
  __device__ __forceinline__ void take(int r, int row, int distance, float pz) { Base::take(r, row, distance, pz, pz); }
  // Writes the block's share of the bucket values' gradient, share[r, d] = sum over its queries of
  // W_ir dout_id (f32, buckets x D), from dO's tile in shared memory (row, d). Every thread calls
  // it (the row sums are warp shuffles); `rows` as for start().
  template <class TileDO>
  __device__ __forceinline__ void finish(const TileDO& sdO, const int* rows, float* __restrict__ share, int d) {
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float low, high;
      this->run_sums(r, low, high);
      if (threadIdx.x % 4 == 0) {
        if (buckets == 1) inner[rows[r]] = low + high;  // under clip 0 both runs are the one bucket
        else {
          inner[rows[r] * buckets] = low;
          inner[rows[r] * buckets + buckets - 1] = high;
        }
      }
    }
    __syncthreads();  // every weight is in
    for (int e = threadIdx.x; e < buckets * d; e += kThreads) {
      const int bucket = e / d, col = e % d;
      float s = 0.0f;
      for (int m = 0; m < kBlockM; ++m) s += inner[m * buckets + bucket] * static_cast<float>(sdO(m, col));
      share[e] = s;
    }
  }
};

}  // namespace attnlab::flash::cuda::sm90
