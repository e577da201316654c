#pragma once
// Device code of the flash backward (FlashAttention-2's recomputation): the weights are rebuilt
// tile by tile from q, k and the saved logsumexp, P = exp(scale q.k + mask - lse), never stored.
//   delta_kernel: D_i = dout_i . out_i (= sum_j P_ij dP_ij, dropout included)
//   dq_kernel:    per tile of 32 queries, over the key tiles they see:
//                 dq_i = scale sum_j dS_ij k_j
//   dkdv_kernel:  per tile of 32 keys, over the query tiles that see them:
//                 dv_j = sum_i P_ij Z_ij dout_i,  dk_j = scale sum_i dS_ij q_i
// with Z_ij = keep / (1 - p) (1 without dropout), dP_ij = (dout_i . v_j) Z_ij and
// dS_ij = P_ij (dP_ij - D_i). dq and dk/dv are computed by separate kernels, each summing in a
// fixed order in registers: no atomics, so gradients are deterministic (at the price of
// computing the scores twice). Accumulation is f32 for f32 and bf16 inputs.
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
// and dS of the tile.
template <int DK, int DV>
constexpr std::size_t dq_smem_floats() {
  return kRows * (DK + 1) + kRows * (DV + 1) + kCols * (DK + 1) + kCols * (DV + 1) + kRows * (kCols + 1);
}

// Block (bh = blockIdx.x, blockIdx.y) computes dq of queries i0 .. i0 + 31 of head bh
// (i0 = 32 blockIdx.y), walking the key tiles the forward walked; thread t owns query i0 + t / 4.
template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kThreads)
    dq_kernel(const BackwardInputs<T> in,
              T* __restrict__ dq) {       // (B, H, Tq, DK)
  extern __shared__ float smem[];
  float* qs = smem;                    // [kRows][DK + 1]
  float* dos = qs + kRows * (DK + 1);  // [kRows][DV + 1]
  float* ks = dos + kRows * (DV + 1);  // [kCols][DK + 1]
  float* vs = ks + kCols * (DK + 1);   // [kCols][DV + 1]
  float* ds = vs + kCols * (DV + 1);   // [kRows][kCols + 1]

  const int r = threadIdx.x / kGroup;
  const int g = threadIdx.x % kGroup;
  const int c0 = g * kColsPerThread;
  const auto [bh, b, i0, i, row_valid, length, key_end, row_end] = query_tile<kRows>(in, r);
  const float lse_i = row_valid ? in.lse[bh * in.tq + i] : -INFINITY;
  const float delta_i = row_valid ? in.delta[bh * in.tq + i] : 0.0f;
  const T* mask_b = mask_row(in, b);
  const float keep_scale = kernels::keep_scale(in.drop);

  load_tile<DK, 1>(qs, in.q + bh * in.tq * DK, i0, in.tq);
  load_tile<DV, 1>(dos, in.dout + bh * in.tq * DV, i0, in.tq);
  float acc[DK / kGroup];
#pragma unroll
  for (int e = 0; e < DK / kGroup; ++e) acc[e] = 0.0f;
  KeepCache cache;

  for (std::int64_t j0 = 0; j0 < key_end; j0 += kCols) {
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
        const float p = expf(s[t] * in.scale + (mask_b ? to_float(mask_b[j]) : 0.0f) - lse_i);
        const float z = drop_factor(in.drop, p, keep_scale, weight_index(bh, i, j, in.tq, in.tk), cache);
        dsv = p * (dp[t] * z - delta_i);
      }
      ds[r * (kCols + 1) + c0 + t] = dsv;
    }
    __syncthreads();  // ds holds the whole tile
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
  }
}

// Dynamic shared memory of dkdv_kernel, in floats: the block's k and v tiles, a q and a dout
// tile (rows padded by one float), the tile's dropped weights and dS key-major, lse and delta.
template <int DK, int DV>
constexpr std::size_t dkdv_smem_floats() {
  return kCols * (DK + 1) + kCols * (DV + 1) + kRows * (DK + 1) + kRows * (DV + 1) + 2 * kCols * (kRows + 1) +
         2 * kRows;
}

// Block (bh = blockIdx.x, blockIdx.y) computes dk and dv of keys j0 .. j0 + 31 of head bh
// (j0 = 32 blockIdx.y), walking the query tiles that may see them; thread t owns key j0 + t / 4
// and the 8 queries 8 (t % 4) .. 8 (t % 4) + 7 of each query tile. A tile entirely past the batch
// row's key length gets zeros at once; under causal masking, query tiles that end before the
// first query seeing key j0 are skipped.
template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kThreads)
    dkdv_kernel(const BackwardInputs<T> in,
                T* __restrict__ dk,         // (B, H, Tk, DK)
                T* __restrict__ dv) {       // (B, H, Tk, DV)
  extern __shared__ float smem[];
  float* ks = smem;                            // [kCols][DK + 1]
  float* vs = ks + kCols * (DK + 1);           // [kCols][DV + 1]
  float* qs = vs + kCols * (DV + 1);           // [kRows][DK + 1]
  float* dos = qs + kRows * (DK + 1);          // [kRows][DV + 1]
  float* pt = dos + kRows * (DV + 1);          // [kCols][kRows + 1]: P Z, key-major
  float* dst = pt + kCols * (kRows + 1);       // [kCols][kRows + 1]: dS, key-major
  float* lse_s = dst + kCols * (kRows + 1);    // [kRows]
  float* delta_s = lse_s + kRows;              // [kRows]

  const int c = threadIdx.x / kGroup;
  const int g = threadIdx.x % kGroup;
  const int r0 = g * kColsPerThread;
  const auto [bh, b, j0, j, key_valid, length] = key_tile<kCols>(in, c);
  const std::int64_t dk_at = (bh * in.tk + j) * DK;  // key j's row of dk and of dv (when key_valid)
  const std::int64_t dv_at = (bh * in.tk + j) * DV;

  if (j0 >= length) {  // every key of the tile is padding (the same for the whole block)
    if (key_valid) {
#pragma unroll
      for (int e = 0; e < DK / kGroup; ++e) dk[dk_at + g + kGroup * e] = from_float<T>(0.0f);
#pragma unroll
      for (int e = 0; e < DV / kGroup; ++e) dv[dv_at + g + kGroup * e] = from_float<T>(0.0f);
    }
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
        const float p = expf(s[t] * in.scale + mask_j - lse_i);
        const float z = drop_factor(in.drop, p, keep_scale, weight_index(bh, i, j, in.tq, in.tk), cache);
        pz = p * z;
        dsv = p * (dp[t] * z - delta_s[r0 + t]);
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
  }
  if (key_valid) {
#pragma unroll
    for (int e = 0; e < DK / kGroup; ++e) dk[dk_at + g + kGroup * e] = from_float<T>(dk_acc[e] * in.scale);
#pragma unroll
    for (int e = 0; e < DV / kGroup; ++e) dv[dv_at + g + kGroup * e] = from_float<T>(dv_acc[e]);
  }
}

}  // namespace attnlab::flash::cuda::kernels
