#pragma once
// Device code of the flash forward: one block of 128 threads per (head, tile of 32 queries) walks
// the key tiles its queries may see, keeping a running maximum m, a running denominator l and
// the output accumulators in registers (online softmax), so the scores never reach global
// memory. Scores and accumulators are f32 for f32 and bf16 inputs. Position terms in kernel form
// add to each score, and each weight carries its bucket value into the output. Also the kernel
// that turns an additive key padding mask into per-batch key lengths. Include the CUDA API (or
// its host emulation) first; flash_forward_cuda.cu launches these.
#include "flash_device.cuh"

namespace attnlab::flash::cuda::kernels {

// Dynamic shared memory of the forward, in floats: q tile, k tile (rows padded by one float so
// that the 8 rows a warp reads at once fall in different banks), v tile, dropped weights.
template <int DK, int DV>
constexpr std::size_t forward_smem_floats() {
  return kRows * (DK + 1) + kCols * (DK + 1) + kCols * DV + kRows * (kCols + 1);
}

// Block (bh = blockIdx.x, blockIdx.y) computes out and lse of queries i0 .. i0 + 31 of head bh
// (i0 = 32 blockIdx.y); thread t owns query i0 + t / 4. Key tiles past the last key that the
// tile's last query may see (key length, causal diagonal) are not visited. With score expressions
// E (attnlab/expr/device_abi.h: the struct generated for a site, compiled by NVRTC), each score
// passes through E::score after its position term, key tiles that mask_mod removes are skipped and
// E::keep is asked only on tiles where it is mixed.
template <typename T, int DK, int DV, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const Inputs<T> in,
                   T* __restrict__ out,        // (B, H, Tq, DV)
                   float* __restrict__ lse) {  // (B, H, Tq)
  extern __shared__ float smem[];
  float* qs = smem;                   // [kRows][DK + 1]
  float* ks = qs + kRows * (DK + 1);  // [kCols][DK + 1]
  float* vs = ks + kCols * (DK + 1);  // [kCols][DV]
  float* ps = vs + kCols * DV;        // [kRows][kCols + 1]: the tile's (dropped) weights, unnormalised

  const int r = threadIdx.x / kGroup;
  const int g = threadIdx.x % kGroup;
  const int c0 = g * kColsPerThread;
  const auto [bh, b, i0, i, row_valid, length, key_end, row_end] = query_tile<kRows>(in, r);
  const T* mask_b = mask_row(in, b);
  const float keep_scale = kernels::keep_scale(in.drop);
  const PositionTerms<T>& pos = in.terms;
  const std::int64_t p_i = pos.q_offset + i;  // the query's position
  const T* scores_i = row_valid ? score_row(pos, bh, in.tq, i) : nullptr;

  load_tile<DK, 1>(qs, in.q + bh * in.tq * DK, i0, in.tq);
  float m = -INFINITY, l = 0.0f;
  float acc[DV / kGroup];
#pragma unroll
  for (int e = 0; e < DV / kGroup; ++e) acc[e] = 0.0f;
  KeepCache cache;

  for (std::int64_t j0 = 0; j0 < key_end; j0 += kCols) {
    // The tile's class under mask_mod: the same for the whole block, so a removed tile is skipped
    // by every thread before the barrier.
    const unsigned char cls = E::kMask ? expr::tile_class(in.expr, b, bh % in.heads, i0, j0) : expr::kTileKept;
    if (cls == expr::kTileRemoved) continue;
    __syncthreads();  // the previous tile's ks, vs and ps are read; qs is loaded
    load_tile<DK, 1>(ks, in.k + bh * in.tk * DK, j0, key_end);
    load_tile<DV, 0>(vs, in.v + bh * in.tk * DV, j0, key_end);
    __syncthreads();
    float s[kColsPerThread];
#pragma unroll
    for (int t = 0; t < kColsPerThread; ++t) s[t] = 0.0f;
    for (int d = 0; d < DK; ++d) {
      const float qd = qs[r * (DK + 1) + d];
#pragma unroll
      for (int t = 0; t < kColsPerThread; ++t) s[t] += qd * ks[(c0 + t) * (DK + 1) + d];
    }
    float tile_max = -INFINITY;
#pragma unroll
    for (int t = 0; t < kColsPerThread; ++t) {
      const std::int64_t j = j0 + c0 + t;
      // Not pair_score, which evaluates the terms before the product: here the product comes
      // first, before the position term's branches, and the compiler keeps it apart from the
      // term's addition, where pair_score's would fuse with it (one rounding less).
      if constexpr (E::kAny)
        s[t] = j < row_end ? expression_score<E>(in, s[t] * in.scale + score_term(pos, bh % in.heads, scores_i, p_i, j),
                                                 cls, b, bh % in.heads, i, j) + mask_at(mask_b, j)
                           : -INFINITY;
      else
        s[t] = j < row_end ? s[t] * in.scale + score_term(pos, bh % in.heads, scores_i, p_i, j) + mask_at(mask_b, j)
                           : -INFINITY;
      tile_max = fmaxf(tile_max, s[t]);
    }
    const float m_new = fmaxf(m, group_max(tile_max));
    // alpha rescales what was summed under the old maximum (0 when m was -inf); while every key
    // seen is masked (m_new = -inf) nothing is summed.
    const bool none = m_new == -INFINITY;
    const float alpha = none ? 1.0f : expf(m - m_new);
    float sum = 0.0f;
#pragma unroll
    for (int t = 0; t < kColsPerThread; ++t) {
      const float p = none ? 0.0f : pair_weight(s[t], m_new);
      sum += p;  // the denominator counts dropped weights too
      ps[r * (kCols + 1) + c0 + t] = p * pair_dropout(in.drop, p, keep_scale, bh, i, j0 + c0 + t, in.tq, in.tk, cache);
    }
    l = l * alpha + group_sum(sum);
    m = m_new;
#pragma unroll
    for (int e = 0; e < DV / kGroup; ++e) acc[e] *= alpha;
    __syncthreads();  // ps holds the whole tile
    for (int c = 0; c < kCols; ++c) {
      const float w = ps[r * (kCols + 1) + c];
#pragma unroll
      for (int e = 0; e < DV / kGroup; ++e) acc[e] += w * vs[c * DV + g + kGroup * e];
      if (const T* vr = value_row<T, DV>(pos, p_i, j0 + c))  // the key's bucket value, from global memory
#pragma unroll
        for (int e = 0; e < DV / kGroup; ++e) acc[e] += w * to_float(vr[g + kGroup * e]);
    }
  }
  if (row_valid) {
    T* o = out + (bh * in.tq + i) * DV;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a row that sees no key gives 0
#pragma unroll
    for (int e = 0; e < DV / kGroup; ++e) o[g + kGroup * e] = from_float<T>(acc[e] * inv);
    if (g == 0) lse[bh * in.tq + i] = l > 0.0f ? m + logf(l) : -INFINITY;
  }
}

// lengths[b] = 1 + the last j with mask[b, j] != -inf (0 when there is none). One thread per batch row.
template <typename T>
__global__ void key_lengths_kernel(const T* __restrict__ mask,  // (B, Tk)
                                   std::int64_t batch, std::int64_t tk,
                                   std::int32_t* __restrict__ lengths) {  // (B)
  for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < batch;
       b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t len = tk;
    while (len > 0 && to_float(mask[b * tk + len - 1]) == -INFINITY) --len;
    lengths[b] = static_cast<std::int32_t>(len);
  }
}

}  // namespace attnlab::flash::cuda::kernels
