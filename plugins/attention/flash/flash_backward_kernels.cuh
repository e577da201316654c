#pragma once
// Device code of the flash backward (FlashAttention-2's recomputation): the weights are rebuilt
// tile by tile from q, k and the saved logsumexp, P = exp(scale q.k + mask - lse), never stored.
//   delta_kernel: D_i = dout_i . out_i (= sum_j P_ij dP_ij, dropout included)
//   dq_kernel:    per tile of 32 queries, over the key tiles they see:
//                 dq_i = scale sum_j dS_ij k_j
//   dkdv_kernel:  per tile of 32 keys, over the query tiles that see them:
//                 dv_j = sum_i P_ij Z_ij dout_i,  dk_j = scale sum_i dS_ij q_i
// with Z_ij = keep / (1 - p) (1 without dropout), dP_ij = (dout_i . (v_j + V_r)) Z_ij and
// dS_ij = P_ij (dP_ij - D_i), where V_r is the bucket value of the pair (0 without value terms).
// Position terms: dq_kernel also sums dS_ij into the gradient of query i's bucket scores (each
// bucket owned by one thread, in shared memory), and dkdv_kernel writes each block's share of the
// bucket values' gradient, sum P_ij Z_ij dout_i over the pairs of each bucket, that
// bucket_values_grad_kernel adds up. dq and dk/dv are computed by separate kernels, each summing
// in a fixed order: no atomics, so gradients are deterministic (at the price of computing the
// scores twice). Accumulation is f32 for f32 and bf16 inputs.
// Include the CUDA API (or its host emulation) first; flash_backward_cuda.cu launches these.
#include "flash_device.cuh"

namespace attnlab::flash::cuda::kernels {

// Block x: warp w computes delta of row 4 x + w. Rows are the B * H * Tq query rows.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    delta_kernel(const T* __restrict__ out,   // (rows, dv)
                 const T* __restrict__ dout,  // (rows, dv)
                 std::int64_t rows, int dv,
                 float* __restrict__ delta) {  // (rows)
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // the same for every lane of the warp
  float s = 0.0f;
  for (int d = lane; d < dv; d += 32) s += to_float(out[row * dv + d]) * to_float(dout[row * dv + d]);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) delta[row] = s;
}

// Dynamic shared memory of dq_kernel, in floats: q, dout, k, v tiles (rows padded by one float),
// and dS of the tile; with bucket scores, dq_terms_smem_floats more for their gradient.
template <int DK, int DV>
constexpr std::size_t dq_smem_floats() {
  return kRows * (DK + 1) + kRows * (DV + 1) + kCols * (DK + 1) + kCols * (DV + 1) + kRows * (kCols + 1);
}
template <typename T>
std::size_t dq_terms_smem_floats(const PositionTerms<T>& t) {
  return t.scores ? static_cast<std::size_t>(kRows * terms::bucket_count(t.score_clip)) : 0;
}

// dout_i . V_r for the bucket value row vr (0 when null); dout_i is a padded row of shared memory.
template <int DV, typename T>
__device__ __forceinline__ float dot_value_row(const float* dout_i, const T* vr) {
  float x = 0.0f;
  if (vr)
    for (int d = 0; d < DV; ++d) x += dout_i[d] * to_float(vr[d]);
  return x;
}

// Block (bh = blockIdx.x, blockIdx.y) computes dq of queries i0 .. i0 + 31 of head bh
// (i0 = 32 blockIdx.y), walking the key tiles the forward walked; thread t owns query i0 + t / 4.
// With score expressions E, dS passes back through E::grad, which also adds the learned tensors'
// gradients (here only, not in dkdv_kernel, so that each pair adds once).
template <typename T, int DK, int DV, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads)
    dq_kernel(const BackwardInputs<T> in,
              T* __restrict__ dq,                // (B, H, Tq, DK)
              T* __restrict__ d_scores) {        // (B, H, Tq, 2 score_clip + 1), with bucket scores
  extern __shared__ float smem[];
  float* qs = smem;                    // [kRows][DK + 1]
  float* dos = qs + kRows * (DK + 1);  // [kRows][DV + 1]
  float* ks = dos + kRows * (DV + 1);  // [kCols][DK + 1]
  float* vs = ks + kCols * (DK + 1);   // [kCols][DV + 1]
  float* ds = vs + kCols * (DV + 1);   // [kRows][kCols + 1]
  float* dsb = ds + kRows * (kCols + 1);  // [kRows][buckets]: the bucket scores' gradient

  const int r = threadIdx.x / kGroup;
  const int g = threadIdx.x % kGroup;
  const int c0 = g * kColsPerThread;
  const auto [bh, b, i0, i, row_valid, length, key_end, row_end] = query_tile<kRows>(in, r);
  const float lse_i = row_valid ? in.lse[bh * in.tq + i] : -INFINITY;
  const float delta_i = row_valid ? in.delta[bh * in.tq + i] : 0.0f;
  const T* mask_b = mask_row(in, b);
  const float keep_scale = kernels::keep_scale(in.drop);
  const PositionTerms<T>& pos = in.terms;
  const std::int64_t p_i = pos.q_offset + i;
  const T* scores_i = row_valid ? score_row(pos, bh, in.tq, i) : nullptr;
  // Thread g of the row owns buckets g, g + 4, ... of the row's gradient (no other thread touches them).
  const std::int64_t buckets = pos.scores ? terms::bucket_count(pos.score_clip) : 0;
  for (std::int64_t n = g; n < buckets; n += kGroup) dsb[r * buckets + n] = 0.0f;

  load_tile<DK, 1>(qs, in.q + bh * in.tq * DK, i0, in.tq);
  load_tile<DV, 1>(dos, in.dout + bh * in.tq * DV, i0, in.tq);
  float acc[DK / kGroup];
#pragma unroll
  for (int e = 0; e < DK / kGroup; ++e) acc[e] = 0.0f;
  KeepCache cache;

  for (std::int64_t j0 = 0; j0 < key_end; j0 += kCols) {
    const unsigned char cls = E::kMask ? expr::tile_class(in.expr, b, bh % in.heads, i0, j0) : expr::kTileKept;
    if (cls == expr::kTileRemoved) continue;  // the same for the whole block
    __syncthreads();  // the previous tile's ks and ds are read; qs and dos are loaded
    load_tile<DK, 1>(ks, in.k + bh * in.tk * DK, j0, key_end);
    load_tile<DV, 1>(vs, in.v + bh * in.tk * DV, j0, key_end);
    __syncthreads();
    float s[kColsPerThread], dp[kColsPerThread];
#pragma unroll
    for (int t = 0; t < kColsPerThread; ++t) s[t] = dp[t] = 0.0f;
    for (int d = 0; d < DK; ++d) {
      const float qd = qs[r * (DK + 1) + d];
#pragma unroll
      for (int t = 0; t < kColsPerThread; ++t) s[t] += qd * ks[(c0 + t) * (DK + 1) + d];
    }
    for (int d = 0; d < DV; ++d) {
      const float od = dos[r * (DV + 1) + d];
#pragma unroll
      for (int t = 0; t < kColsPerThread; ++t) dp[t] += od * vs[(c0 + t) * (DV + 1) + d];
    }
#pragma unroll
    for (int t = 0; t < kColsPerThread; ++t) {
      const std::int64_t j = j0 + c0 + t;
      float dsv = 0.0f;
      if (j < row_end && lse_i != -INFINITY) {
        const float term = score_term(pos, bh % in.heads, scores_i, p_i, j);
        float raw = 0.0f, x;
        if constexpr (E::kAny) {
          raw = pair_score(s[t], in.scale, term, 0.0f);
          x = expression_score<E>(in, raw, cls, b, bh % in.heads, i, j) + mask_at(mask_b, j);
        } else {
          x = pair_score(s[t], in.scale, term, mask_at(mask_b, j));
        }
        const float p = pair_weight(x, lse_i);
        const float z = pair_dropout(in.drop, p, keep_scale, bh, i, j, in.tq, in.tk, cache);
        const float dpv = dp[t] + dot_value_row<DV>(dos + r * (DV + 1), value_row<T, DV>(pos, p_i, j));
        dsv = pair_grads(p, z, dpv, delta_i).ds;
        if constexpr (E::kAny) dsv = expression_grad<E>(in, raw, dsv, b, bh % in.heads, i, j, true);
      }
      ds[r * (kCols + 1) + c0 + t] = dsv;
    }
    __syncthreads();  // ds holds the whole tile
    for (std::int64_t n = g; n < buckets; n += kGroup) {
      std::int64_t first, last;
      terms::bucket_keys(p_i, n, pos.score_clip, j0, kCols, first, last);
      float sum = 0.0f;
      for (std::int64_t c = first; c < last; ++c) sum += ds[r * (kCols + 1) + c];
      dsb[r * buckets + n] += sum;
    }
    for (int c = 0; c < kCols; ++c) {
      const float w = ds[r * (kCols + 1) + c];
#pragma unroll
      for (int e = 0; e < DK / kGroup; ++e) acc[e] += w * ks[c * (DK + 1) + g + kGroup * e];
    }
  }
  if (row_valid) {
    T* out = dq + (bh * in.tq + i) * DK;
#pragma unroll
    for (int e = 0; e < DK / kGroup; ++e) out[g + kGroup * e] = from_float<T>(acc[e] * in.scale);
    for (std::int64_t n = g; n < buckets; n += kGroup)
      d_scores[(bh * in.tq + i) * buckets + n] = from_float<T>(dsb[r * buckets + n]);
  }
}

// Dynamic shared memory of dkdv_kernel, in floats: the block's k and v tiles, a q and a dout
// tile (rows padded by one float), the tile's dropped weights and dS key-major, lse and delta;
// with bucket values, dkdv_terms_smem_floats more for the block's share of their gradient.
template <int DK, int DV>
constexpr std::size_t dkdv_smem_floats() {
  return kCols * (DK + 1) + kCols * (DV + 1) + kRows * (DK + 1) + kRows * (DV + 1) + 2 * kCols * (kRows + 1) +
         2 * kRows;
}
template <typename T, int DV>
std::size_t dkdv_terms_smem_floats(const PositionTerms<T>& t) {
  return t.values ? static_cast<std::size_t>(terms::bucket_count(t.value_clip) * DV) : 0;
}

// Block (bh = blockIdx.x, blockIdx.y) computes dk and dv of keys j0 .. j0 + 31 of head bh
// (j0 = 32 blockIdx.y), walking the query tiles that may see them; thread t owns key j0 + t / 4
// and the 8 queries 8 (t % 4) .. 8 (t % 4) + 7 of each query tile. A tile entirely past the batch
// row's key length gets zeros at once; under causal masking, query tiles that end before the
// first query seeing key j0 are skipped. With bucket values, the block writes its share of their
// gradient to row (blockIdx.x gridDim.y + blockIdx.y) of value_shares. With score expressions E,
// query tiles that mask_mod removes are skipped and dS passes back through E::grad.
template <typename T, int DK, int DV, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads)
    dkdv_kernel(const BackwardInputs<T> in,
                T* __restrict__ dk,                // (B, H, Tk, DK)
                T* __restrict__ dv,                // (B, H, Tk, DV)
                float* __restrict__ value_shares) {  // (blocks, 2 value_clip + 1, DV), with bucket values
  extern __shared__ float smem[];
  float* ks = smem;                            // [kCols][DK + 1]
  float* vs = ks + kCols * (DK + 1);           // [kCols][DV + 1]
  float* qs = vs + kCols * (DV + 1);           // [kRows][DK + 1]
  float* dos = qs + kRows * (DK + 1);          // [kRows][DV + 1]
  float* pt = dos + kRows * (DV + 1);          // [kCols][kRows + 1]: P Z, key-major
  float* dst = pt + kCols * (kRows + 1);       // [kCols][kRows + 1]: dS, key-major
  float* lse_s = dst + kCols * (kRows + 1);    // [kRows]
  float* delta_s = lse_s + kRows;              // [kRows]
  float* vacc = delta_s + kRows;               // [buckets][DV]: this block's share of dV_r

  const int c = threadIdx.x / kGroup;
  const int g = threadIdx.x % kGroup;
  const int r0 = g * kColsPerThread;
  const auto [bh, b, j0, j, key_valid, length] = key_tile<kCols>(in, c);
  const std::int64_t dk_at = (bh * in.tk + j) * DK;  // key j's row of dk and of dv (when key_valid)
  const std::int64_t dv_at = (bh * in.tk + j) * DV;
  const PositionTerms<T>& pos = in.terms;
  // Thread t owns elements t, t + kThreads, ... of the block's share of the bucket values' gradient.
  const std::int64_t shares = pos.values ? terms::bucket_count(pos.value_clip) * DV : 0;
  float* share = value_shares ? value_shares + (static_cast<std::int64_t>(blockIdx.x) * gridDim.y + blockIdx.y) * shares
                              : nullptr;
  for (std::int64_t o = threadIdx.x; o < shares; o += kThreads) vacc[o] = 0.0f;

  if (j0 >= length) {  // every key of the tile is padding (the same for the whole block)
    if (key_valid) {
#pragma unroll
      for (int e = 0; e < DK / kGroup; ++e) dk[dk_at + g + kGroup * e] = from_float<T>(0.0f);
#pragma unroll
      for (int e = 0; e < DV / kGroup; ++e) dv[dv_at + g + kGroup * e] = from_float<T>(0.0f);
    }
    for (std::int64_t o = threadIdx.x; o < shares; o += kThreads) share[o] = 0.0f;
    return;
  }
  load_tile<DK, 1>(ks, in.k + bh * in.tk * DK, j0, length);
  load_tile<DV, 1>(vs, in.v + bh * in.tk * DV, j0, length);
  const float mask_j = (in.mask && key_valid) ? to_float(in.mask[b * in.tk + j]) : 0.0f;
  const float keep_scale = kernels::keep_scale(in.drop);
  float dk_acc[DK / kGroup], dv_acc[DV / kGroup];
#pragma unroll
  for (int e = 0; e < DK / kGroup; ++e) dk_acc[e] = 0.0f;
#pragma unroll
  for (int e = 0; e < DV / kGroup; ++e) dv_acc[e] = 0.0f;
  KeepCache cache;

  // Query i sees key j0 only when i >= j0 - (tk - tq) under causal masking.
  std::int64_t first = in.causal ? j0 - (in.tk - in.tq) : 0;
  first = first < 0 ? 0 : first;
  for (std::int64_t i0 = first / kRows * kRows; i0 < in.tq; i0 += kRows) {
    const unsigned char cls = E::kMask ? expr::tile_class(in.expr, b, bh % in.heads, i0, j0) : expr::kTileKept;
    if (cls == expr::kTileRemoved) continue;  // the same for the whole block
    __syncthreads();  // ks and vs are loaded; the previous tile's qs, dos, pt and dst are read
    load_tile<DK, 1>(qs, in.q + bh * in.tq * DK, i0, in.tq);
    load_tile<DV, 1>(dos, in.dout + bh * in.tq * DV, i0, in.tq);
    if (threadIdx.x < kRows) {
      const std::int64_t row = i0 + threadIdx.x;
      lse_s[threadIdx.x] = row < in.tq ? in.lse[bh * in.tq + row] : -INFINITY;
      delta_s[threadIdx.x] = row < in.tq ? in.delta[bh * in.tq + row] : 0.0f;
    }
    __syncthreads();
    float s[kColsPerThread], dp[kColsPerThread];
#pragma unroll
    for (int t = 0; t < kColsPerThread; ++t) s[t] = dp[t] = 0.0f;
    for (int d = 0; d < DK; ++d) {
      const float kd = ks[c * (DK + 1) + d];
#pragma unroll
      for (int t = 0; t < kColsPerThread; ++t) s[t] += qs[(r0 + t) * (DK + 1) + d] * kd;
    }
    for (int d = 0; d < DV; ++d) {
      const float vd = vs[c * (DV + 1) + d];
#pragma unroll
      for (int t = 0; t < kColsPerThread; ++t) dp[t] += dos[(r0 + t) * (DV + 1) + d] * vd;
    }
#pragma unroll
    for (int t = 0; t < kColsPerThread; ++t) {
      const std::int64_t i = i0 + r0 + t;
      const float lse_i = lse_s[r0 + t];
      float pz = 0.0f, dsv = 0.0f;
      if (i < in.tq && key_valid && j < visible_end(i, length, in.tq, in.tk, in.causal) && lse_i != -INFINITY) {
        const std::int64_t p_i = pos.q_offset + i;
        const float term = score_term(pos, bh % in.heads, score_row(pos, bh, in.tq, i), p_i, j);
        float raw = 0.0f, x;
        if constexpr (E::kAny) {
          raw = pair_score(s[t], in.scale, term, 0.0f);
          x = expression_score<E>(in, raw, cls, b, bh % in.heads, i, j) + mask_j;
        } else {
          x = pair_score(s[t], in.scale, term, mask_j);
        }
        const float p = pair_weight(x, lse_i);
        const float z = pair_dropout(in.drop, p, keep_scale, bh, i, j, in.tq, in.tk, cache);
        const float dpv = dp[t] + dot_value_row<DV>(dos + (r0 + t) * (DV + 1), value_row<T, DV>(pos, p_i, j));
        const PairGrads grads = pair_grads(p, z, dpv, delta_s[r0 + t]);
        pz = grads.pz;
        dsv = grads.ds;
        if constexpr (E::kAny) dsv = expression_grad<E>(in, raw, dsv, b, bh % in.heads, i, j, false);
      }
      pt[c * (kRows + 1) + r0 + t] = pz;
      dst[c * (kRows + 1) + r0 + t] = dsv;
    }
    __syncthreads();  // pt and dst hold the whole tile
    for (int rr = 0; rr < kRows; ++rr) {
      const float w = pt[c * (kRows + 1) + rr];
      const float x = dst[c * (kRows + 1) + rr];
#pragma unroll
      for (int e = 0; e < DV / kGroup; ++e) dv_acc[e] += w * dos[rr * (DV + 1) + g + kGroup * e];
#pragma unroll
      for (int e = 0; e < DK / kGroup; ++e) dk_acc[e] += x * qs[rr * (DK + 1) + g + kGroup * e];
    }
    // dV_r += sum over the tile's pairs in bucket r of P Z dout_i (the pairs of a query row and a
    // bucket are a run of keys: bucket_keys).
    for (std::int64_t o = threadIdx.x; o < shares; o += kThreads) {
      const std::int64_t n = o / DV, d = o % DV;
      float sum = 0.0f;
      for (int rr = 0; rr < kRows && i0 + rr < in.tq; ++rr) {
        std::int64_t first, last;
        terms::bucket_keys(pos.q_offset + i0 + rr, n, pos.value_clip, j0, kCols, first, last);
        float w = 0.0f;
        for (std::int64_t cc = first; cc < last; ++cc) w += pt[cc * (kRows + 1) + rr];
        sum += w * dos[rr * (DV + 1) + d];
      }
      vacc[o] += sum;
    }
  }
  for (std::int64_t o = threadIdx.x; o < shares; o += kThreads) share[o] = vacc[o];
  if (key_valid) {
#pragma unroll
    for (int e = 0; e < DK / kGroup; ++e) dk[dk_at + g + kGroup * e] = from_float<T>(dk_acc[e] * in.scale);
#pragma unroll
    for (int e = 0; e < DV / kGroup; ++e) dv[dv_at + g + kGroup * e] = from_float<T>(dv_acc[e]);
  }
}

// The bucket values' gradient: out[o] = sum over the dkdv blocks of their shares, in block order.
// One thread per element (a grid-stride loop).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    bucket_values_grad_kernel(const float* __restrict__ shares,  // (blocks, n)
                              std::int64_t blocks, std::int64_t n,
                              T* __restrict__ out) {             // (n)
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (std::int64_t blk = 0; blk < blocks; ++blk) sum += shares[blk * n + o];
    out[o] = from_float<T>(sum);
  }
}

}  // namespace attnlab::flash::cuda::kernels
