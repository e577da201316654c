#pragma once
// The bf16 flash forward on tensor cores: one block of 4 warps per (head, tile of 64 queries)
// walks the tiles of 64 keys its queries may see. Per key tile, warp w computes the scores of
// its 16 queries, S = Q K^T, with WMMA into shared memory (f32); lanes 2 r and 2 r + 1 run the
// online softmax of row r there (running maximum m and denominator l in registers, f32),
// rescale the row's running output by exp(m_old - m_new) and write the row's weights as bf16;
// then the warp adds P V to its 16 rows of the running output, which stays in shared memory as
// f32 between tiles. Numerics: scores, softmax statistics, the denominator and the output are
// f32; P enters the P V product rounded to bf16 (as in FlashAttention-2), while l sums the
// unrounded weights. Include the CUDA API and <mma.h> (or their host emulation) first;
// flash_forward_cuda.cu launches this.
#include "flash_tc_device.cuh"
#include "flash_tc_mma.cuh"

namespace attnlab::flash::cuda::tc {

// Shared memory of forward_kernel<DK, DV>, byte offsets of its tiles:
//   q [64][DK + 8] bf16, k [64][DK + 8] bf16, v [64][DV + 8] bf16,
//   s [64][64 + 4] f32 (scores), p [64][64 + 8] bf16 (weights), o [64][DV + 4] f32 (running output).
// DK = DV = 64: 9 + 9 + 9 + 17 + 9 + 17 = 70 KiB; DK = DV = 128: 17 + 17 + 17 + 17 + 9 + 33 =
// 110 KiB (64/128 pairings in between). All under sm_90's 227 KiB per block (the opt-in above
// 48 KiB is the launcher's), so 3 blocks (64) or 2 blocks (128) fit on one SM.
template <int DK, int DV>
struct ForwardSmem {
  static constexpr int ldq = DK + kPadH, ldv = DV + kPadH, lds = kCols + kPadF, ldp = kCols + kPadH, ldo = DV + kPadF;
  static constexpr int q = 0;
  static constexpr int k = q + tile_bytes(kRows, ldq, 2);
  static constexpr int v = k + tile_bytes(kCols, ldq, 2);
  static constexpr int s = v + tile_bytes(kCols, ldv, 2);
  static constexpr int p = s + tile_bytes(kRows, lds, 4);
  static constexpr int o = p + tile_bytes(kRows, ldp, 2);
  static constexpr int bytes = o + tile_bytes(kRows, ldo, 4);
};

// Block (bh = blockIdx.x, blockIdx.y) computes out and lse of queries i0 .. i0 + 63 of head bh
// (i0 = 64 blockIdx.y). Key tiles past the last key the tile's last query may see (key length,
// causal diagonal) are not visited; the loop's trip count is the same for the whole block, so
// every __syncthreads is reached by every thread. With score expressions E (as in the FMA kernel,
// flash_forward_kernels.cuh), each score passes through E::score after the ALiBi term, key tiles
// that mask_mod removes are skipped (mma_tile_class: the same for the whole block) and E::keep is
// asked only on mixed tiles.
template <int DK, int DV, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const kernels::Inputs<bf16> in,
                   bf16* __restrict__ out,     // (B, H, Tq, DV)
                   float* __restrict__ lse) {  // (B, H, Tq)
  namespace wmma = nvcuda::wmma;
  using L = ForwardSmem<DK, DV>;
  using detail::FragC;
  extern __shared__ __align__(128) unsigned char tc_smem[];
  bf16* qs = reinterpret_cast<bf16*>(tc_smem + L::q);
  bf16* ks = reinterpret_cast<bf16*>(tc_smem + L::k);
  bf16* vs = reinterpret_cast<bf16*>(tc_smem + L::v);
  float* ss = reinterpret_cast<float*>(tc_smem + L::s);
  bf16* ps = reinterpret_cast<bf16*>(tc_smem + L::p);
  float* os = reinterpret_cast<float*>(tc_smem + L::o);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp * kFrag;         // the warp's first row of the tile
  const int lr = wr + lane / 2;        // the lane's row
  const int half = lane % 2;           // the lane's columns: half, half + 2, ...
  const auto [bh, b, i0, i, row_valid, length, key_end, row_end] = query_tile<kRows>(in, lr);
  const bf16* mask_b = mask_row(in, b);
  const std::int64_t head = bh % in.heads;
  const float keep_scale = kernels::keep_scale(in.drop);

  load_rows<DK>(qs, in.q + bh * in.tq * DK, i0, in.tq);
  for (int d = half; d < DV; d += 2) os[lr * L::ldo + d] = 0.0f;  // the lane's half of its row
  float m = -INFINITY, l = 0.0f;  // the same in both lanes of a row
  KeepCache cache;

  for (std::int64_t j0 = 0; j0 < key_end; j0 += kCols) {
    const unsigned char cls = E::kMask ? mma_tile_class(in.expr, b, head, i0, j0) : expr::kTileKept;
    if (cls == expr::kTileRemoved) continue;
    __syncthreads();  // every warp is done with the previous ks and vs; qs and os are written
    load_rows<DK>(ks, in.k + bh * in.tk * DK, j0, key_end);
    load_rows<DV>(vs, in.v + bh * in.tk * DV, j0, key_end);
    __syncthreads();

    // S = Q K^T for the warp's 16 rows and the tile's 64 keys.
    detail::rows_times_transposed<DK>(ss + wr * L::lds, L::lds, qs + wr * L::ldq, L::ldq, ks, L::ldq);
    __syncwarp();  // the warp's 16 score rows are in ss

    // Online softmax of the lane's row over its 32 columns, both lanes of the row together.
    // The lane's scores replace S in ss (the warp's own rows: no other lane reads them).
    float tile_max = -INFINITY;
    for (int c = half; c < kCols; c += 2) {
      const std::int64_t j = j0 + c;
      // Not pair_score, which evaluates the terms before the product: with it the compiler lays
      // this loop out otherwise. The same arithmetic, the terms after the product.
      float s = -INFINITY;
      if (j < row_end) {
        if constexpr (E::kAny)
          s = expression_score<E>(in, ss[lr * L::lds + c] * in.scale + alibi_bias(in.terms, head, i, j), cls, b, head, i,
                                  j) + mask_at(mask_b, j);
        else
          s = ss[lr * L::lds + c] * in.scale + mask_at(mask_b, j) + alibi_bias(in.terms, head, i, j);
      }
      ss[lr * L::lds + c] = s;
      tile_max = fmaxf(tile_max, s);
    }
    const float m_new = fmaxf(m, fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1)));
    // alpha rescales what was summed under the old maximum (0 when m was -inf); while every key
    // seen is masked (m_new = -inf) nothing is summed.
    const bool none = m_new == -INFINITY;
    const float alpha = none ? 1.0f : expf(m - m_new);
    float sum = 0.0f;
    for (int c = half; c < kCols; c += 2) {
      const std::int64_t j = j0 + c;
      float p = 0.0f;
      if (!none && j < row_end) p = pair_weight(ss[lr * L::lds + c], m_new);
      sum += p;  // the denominator counts dropped weights too
      const float z = pair_dropout(in.drop, p, keep_scale, bh, i, j, in.tq, in.tk, cache);
      ps[lr * L::ldp + c] = from_float<bf16>(p * z);
    }
    l = l * alpha + sum + __shfl_xor_sync(0xffffffffu, sum, 1);
    m = m_new;
    for (int d = half; d < DV; d += 2) os[lr * L::ldo + d] *= alpha;
    __syncwarp();  // the warp's rows of ps and of the rescaled os are written

    // O += P V on the warp's 16 rows, through accumulators loaded from and stored back to os.
    FragC oacc[DV / kFrag];
#pragma unroll
    for (int n = 0; n < DV / kFrag; ++n)
      wmma::load_matrix_sync(oacc[n], os + wr * L::ldo + n * kFrag, L::ldo, wmma::mem_row_major);
    detail::accumulate_rows_times<DV>(oacc, ps + wr * L::ldp, L::ldp, vs, L::ldv);
#pragma unroll
    for (int n = 0; n < DV / kFrag; ++n)
      wmma::store_matrix_sync(os + wr * L::ldo + n * kFrag, oacc[n], L::ldo, wmma::mem_row_major);
    __syncwarp();  // os is settled before its lanes rescale or write it
  }
  // Each lane reads only its own row's columns of os, which its warp wrote (synchronised above).
  if (row_valid) {
    bf16* o = out + (bh * in.tq + i) * DV;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a row that sees no key gives 0
    for (int d = half; d < DV; d += 2) o[d] = from_float<bf16>(os[lr * L::ldo + d] * inv);
    if (half == 0) lse[bh * in.tq + i] = l > 0.0f ? m + logf(l) : -INFINITY;
  }
}

}  // namespace attnlab::flash::cuda::tc
