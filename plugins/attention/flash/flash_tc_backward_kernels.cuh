#pragma once
// The bf16 flash backward on tensor cores (FlashAttention-2's recomputation, as in
// flash_backward_kernels.cuh, whose delta_kernel computes D = rowsum(dout * out) first):
//   dq_kernel:   per tile of 64 queries, over the key tiles they see: S = Q K^T and dP = dO V^T
//                with WMMA into shared memory (f32), then per element P = exp(scale s + mask -
//                lse), dS = P (dP Z - D), rounded to bf16, and dQ += dS K with WMMA into
//                accumulators that stay in registers for the whole walk;
//   dkdv_kernel: per tile of 64 keys, over the query tiles that see them: S^T = K Q^T and
//                dP^T = V dO^T, then P Z and dS key-major in bf16, dV += (P Z)^T dO and
//                dK += dS^T Q into register accumulators.
// Z is keep / (1 - p) (1 without dropout), from the same Philox numbering as every other path.
// Numerics: S, dP, P, dS, D and the accumulators are f32; P Z and dS enter their products
// rounded to bf16 (as in FlashAttention-2). No atomics: each kernel sums in a fixed order, so
// gradients are deterministic. Block layout as in flash_tc_device.cuh; a lane pair owns a row.
// Include the CUDA API and <mma.h> (or their host emulation) first; flash_backward_cuda.cu
// launches these.
#include "flash_tc_device.cuh"
#include "flash_tc_mma.cuh"

namespace attnlab::flash::cuda::tc {

// Shared memory of dq_kernel<DK, DV>, byte offsets:
//   q [64][DK + 8] bf16, dout [64][DV + 8] bf16, k [64][DK + 8] bf16, v [64][DV + 8] bf16,
//   s and dp [64][64 + 4] f32 each, ds [64][64 + 8] bf16. After the walk, dQ is staged as
//   [64][DK + 4] f32 over s and dp (which it fits: 64 (DK + 4) <= 2 * 64 * 68 for DK <= 128).
// DK = DV = 64: 4 * 9 + 2 * 17 + 9 = 79 KiB; DK = DV = 128: 4 * 17 + 2 * 17 + 9 = 110.5 KiB.
template <int DK, int DV>
struct DqSmem {
  static constexpr int ldq = DK + kPadH, ldo = DV + kPadH, lds = kCols + kPadF, ldd = kCols + kPadH, ldg = DK + kPadF;
  static constexpr int q = 0;
  static constexpr int dout = q + tile_bytes(kRows, ldq, 2);
  static constexpr int k = dout + tile_bytes(kRows, ldo, 2);
  static constexpr int v = k + tile_bytes(kCols, ldq, 2);
  static constexpr int s = v + tile_bytes(kCols, ldo, 2);
  static constexpr int dp = s + tile_bytes(kRows, lds, 4);
  static constexpr int ds = dp + tile_bytes(kRows, lds, 4);
  static constexpr int bytes = ds + tile_bytes(kRows, ldd, 2);
  static_assert(tile_bytes(kRows, ldg, 4) <= ds - s, "dQ's staging fits over s and dp");
};

// Shared memory of dkdv_kernel<DK, DV>, byte offsets:
//   k [64][DK + 8] bf16, v [64][DV + 8] bf16, q [64][DK + 8] bf16, dout [64][DV + 8] bf16,
//   s and dp [64][64 + 4] f32 each (key-major), pz and ds [64][64 + 8] bf16 each (key-major),
//   lse and delta [64] f32 each. After the walk, dK and then dV are staged as
//   [64][max(DK, DV) + 4] f32 over s and dp.
// DK = DV = 64: 4 * 9 + 2 * 17 + 2 * 9 + 0.5 = 88.5 KiB; DK = DV = 128: 4 * 17 + 2 * 17 + 2 * 9 +
// 0.5 = 120.5 KiB.
template <int DK, int DV>
struct DkdvSmem {
  static constexpr int ldk = DK + kPadH, ldv = DV + kPadH, lds = kRows + kPadF, ldp = kRows + kPadH;
  static constexpr int ldg = (DK > DV ? DK : DV) + kPadF;
  static constexpr int k = 0;
  static constexpr int v = k + tile_bytes(kRows, ldk, 2);
  static constexpr int q = v + tile_bytes(kRows, ldv, 2);
  static constexpr int dout = q + tile_bytes(kCols, ldk, 2);
  static constexpr int s = dout + tile_bytes(kCols, ldv, 2);
  static constexpr int dp = s + tile_bytes(kRows, lds, 4);
  static constexpr int pz = dp + tile_bytes(kRows, lds, 4);
  static constexpr int ds = pz + tile_bytes(kRows, ldp, 2);
  static constexpr int stats = ds + tile_bytes(kRows, ldp, 2);
  static constexpr int bytes = stats + 2 * kCols * 4;
  static_assert(tile_bytes(kRows, ldg, 4) <= pz - s, "dK's and dV's staging fits over s and dp");
};

namespace detail {

// Writes the warp's 16 rows of acc (a [64][D] result) to rows row0 .. row0 + 63 of dst [rows, D]
// (those below valid_rows), times `factor`, through the staging tile (f32, ldg) in shared memory.
// The warp's rows of the staging tile must be free. A warp collective; ends with __syncwarp.
template <int D>
__device__ __forceinline__ void write_rows(bf16* dst, std::int64_t row0, std::int64_t valid_rows, float factor,
                                           FragC (&acc)[D / kFrag], float* stage, int ldg) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp * kFrag, lr = wr + lane / 2, half = lane % 2;
#pragma unroll
  for (int n = 0; n < D / kFrag; ++n)
    wmma::store_matrix_sync(stage + wr * ldg + n * kFrag, acc[n], ldg, wmma::mem_row_major);
  __syncwarp();  // the warp's staged rows are written
  const std::int64_t row = row0 + lr;
  if (row < valid_rows)
    for (int d = half; d < D; d += 2) dst[row * D + d] = from_float<bf16>(stage[lr * ldg + d] * factor);
  __syncwarp();  // the staged rows are read before the warp writes them again
}

}  // namespace detail

// Block (bh = blockIdx.x, blockIdx.y) computes dq of queries i0 .. i0 + 63 of head bh
// (i0 = 64 blockIdx.y), walking the key tiles the forward walked (a block-uniform trip count).
// With score expressions E, key tiles that mask_mod removes are skipped and dS passes back
// through E::grad, which also adds the learned tensors' gradients (here only, once per pair).
template <int DK, int DV, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads)
    dq_kernel(const kernels::BackwardInputs<bf16> in,
              bf16* __restrict__ dq) {    // (B, H, Tq, DK)
  using L = DqSmem<DK, DV>;
  using detail::FragC;
  extern __shared__ __align__(128) unsigned char tc_smem[];
  bf16* qs = reinterpret_cast<bf16*>(tc_smem + L::q);
  bf16* dos = reinterpret_cast<bf16*>(tc_smem + L::dout);
  bf16* ks = reinterpret_cast<bf16*>(tc_smem + L::k);
  bf16* vs = reinterpret_cast<bf16*>(tc_smem + L::v);
  float* ss = reinterpret_cast<float*>(tc_smem + L::s);
  float* dps = reinterpret_cast<float*>(tc_smem + L::dp);
  bf16* dss = reinterpret_cast<bf16*>(tc_smem + L::ds);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp * kFrag, lr = wr + lane / 2, half = lane % 2;
  const auto [bh, b, i0, i, row_valid, length, key_end, row_end] = query_tile<kRows>(in, lr);
  const float lse_i = row_valid ? in.lse[bh * in.tq + i] : -INFINITY;
  const float delta_i = row_valid ? in.delta[bh * in.tq + i] : 0.0f;
  const bf16* mask_b = mask_row(in, b);
  const std::int64_t head = bh % in.heads;
  const float keep_scale = kernels::keep_scale(in.drop);

  load_rows<DK>(qs, in.q + bh * in.tq * DK, i0, in.tq);
  load_rows<DV>(dos, in.dout + bh * in.tq * DV, i0, in.tq);
  FragC acc[DK / kFrag];
#pragma unroll
  for (int n = 0; n < DK / kFrag; ++n) nvcuda::wmma::fill_fragment(acc[n], 0.0f);
  KeepCache cache;

  for (std::int64_t j0 = 0; j0 < key_end; j0 += kCols) {
    const unsigned char cls = E::kMask ? mma_tile_class(in.expr, b, head, i0, j0) : expr::kTileKept;
    if (cls == expr::kTileRemoved) continue;
    __syncthreads();  // every warp is done with the previous ks and vs; qs and dos are loaded
    load_rows<DK>(ks, in.k + bh * in.tk * DK, j0, key_end);
    load_rows<DV>(vs, in.v + bh * in.tk * DV, j0, key_end);
    __syncthreads();
    detail::rows_times_transposed<DK>(ss + wr * L::lds, L::lds, qs + wr * L::ldq, L::ldq, ks, L::ldq);   // S
    detail::rows_times_transposed<DV>(dps + wr * L::lds, L::lds, dos + wr * L::ldo, L::ldo, vs, L::ldo); // dP
    __syncwarp();  // the warp's rows of ss and dps are written
    for (int c = half; c < kCols; c += 2) {
      const std::int64_t j = j0 + c;
      float dsv = 0.0f;
      if (j < row_end && lse_i != -INFINITY) {
        float x, raw = 0.0f;
        if constexpr (E::kAny) {
          raw = ss[lr * L::lds + c] * in.scale + alibi_bias(in.terms, head, i, j);
          x = expression_score<E>(in, raw, cls, b, head, i, j) + mask_at(mask_b, j);
        } else {
          x = pair_score(ss[lr * L::lds + c], in.scale, mask_at(mask_b, j), alibi_bias(in.terms, head, i, j));
        }
        const float p = pair_weight(x, lse_i);
        const float z = pair_dropout(in.drop, p, keep_scale, bh, i, j, in.tq, in.tk, cache);
        dsv = pair_grads(p, z, dps[lr * L::lds + c], delta_i).ds;
        if constexpr (E::kAny) dsv = expression_grad<E>(in, raw, dsv, b, head, i, j, true);
      }
      dss[lr * L::ldd + c] = from_float<bf16>(dsv);
    }
    __syncwarp();  // the warp's rows of dss are written; its reads of ss and dps are done
    detail::accumulate_rows_times<DK>(acc, dss + wr * L::ldd, L::ldd, ks, L::ldq);  // dQ += dS K
  }
  __syncthreads();  // every warp is done with ss and dps, which the staging reuses
  detail::write_rows<DK>(dq + bh * in.tq * DK, i0, in.tq, in.scale, acc, ss, L::ldg);
}

// Block (bh = blockIdx.x, blockIdx.y) computes dk and dv of keys j0 .. j0 + 63 of head bh
// (j0 = 64 blockIdx.y), walking the query tiles that may see them (under causal masking, from
// the tile of the first query that sees key j0). A tile entirely past the batch row's key length
// gets zeros at once (the whole block returns, before any barrier). With score expressions E,
// query tiles that mask_mod removes are skipped and dS passes back through E::grad.
template <int DK, int DV, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads)
    dkdv_kernel(const kernels::BackwardInputs<bf16> in,
                bf16* __restrict__ dk,      // (B, H, Tk, DK)
                bf16* __restrict__ dv) {    // (B, H, Tk, DV)
  using L = DkdvSmem<DK, DV>;
  using detail::FragC;
  extern __shared__ __align__(128) unsigned char tc_smem[];
  bf16* ks = reinterpret_cast<bf16*>(tc_smem + L::k);
  bf16* vs = reinterpret_cast<bf16*>(tc_smem + L::v);
  bf16* qs = reinterpret_cast<bf16*>(tc_smem + L::q);
  bf16* dos = reinterpret_cast<bf16*>(tc_smem + L::dout);
  float* sts = reinterpret_cast<float*>(tc_smem + L::s);   // S^T: [key][query]
  float* dpts = reinterpret_cast<float*>(tc_smem + L::dp); // dP^T
  bf16* pzs = reinterpret_cast<bf16*>(tc_smem + L::pz);    // (P Z)^T
  bf16* dsts = reinterpret_cast<bf16*>(tc_smem + L::ds);   // dS^T
  float* lse_s = reinterpret_cast<float*>(tc_smem + L::stats);
  float* delta_s = lse_s + kCols;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp * kFrag, lr = wr + lane / 2, half = lane % 2;  // lr: the lane's key of the tile
  const auto [bh, b, j0, j, key_valid, length] = key_tile<kRows>(in, lr);

  if (j0 >= length) {  // every key of the tile is padding (the same for the whole block)
    kernels::zero_rows<kRows, DK, kThreads>(dk + bh * in.tk * DK, j0, in.tk);
    kernels::zero_rows<kRows, DV, kThreads>(dv + bh * in.tk * DV, j0, in.tk);
    return;
  }
  load_rows<DK>(ks, in.k + bh * in.tk * DK, j0, length);
  load_rows<DV>(vs, in.v + bh * in.tk * DV, j0, length);
  const float mask_j = (in.mask && key_valid) ? to_float(in.mask[b * in.tk + j]) : 0.0f;
  const std::int64_t head = bh % in.heads;
  const float keep_scale = kernels::keep_scale(in.drop);
  FragC dk_acc[DK / kFrag], dv_acc[DV / kFrag];
#pragma unroll
  for (int n = 0; n < DK / kFrag; ++n) nvcuda::wmma::fill_fragment(dk_acc[n], 0.0f);
#pragma unroll
  for (int n = 0; n < DV / kFrag; ++n) nvcuda::wmma::fill_fragment(dv_acc[n], 0.0f);
  KeepCache cache;

  // Query i sees key j0 only when i >= j0 - (tk - tq) under causal masking.
  std::int64_t first = in.causal ? j0 - (in.tk - in.tq) : 0;
  first = first < 0 ? 0 : first;
  for (std::int64_t i0 = first / kCols * kCols; i0 < in.tq; i0 += kCols) {
    const unsigned char cls = E::kMask ? mma_tile_class(in.expr, b, head, i0, j0) : expr::kTileKept;
    if (cls == expr::kTileRemoved) continue;
    __syncthreads();  // ks and vs are loaded; every warp is done with the previous qs, dos and stats
    load_rows<DK>(qs, in.q + bh * in.tq * DK, i0, in.tq);
    load_rows<DV>(dos, in.dout + bh * in.tq * DV, i0, in.tq);
    if (threadIdx.x < kCols) {
      const std::int64_t row = i0 + threadIdx.x;
      lse_s[threadIdx.x] = row < in.tq ? in.lse[bh * in.tq + row] : -INFINITY;
      delta_s[threadIdx.x] = row < in.tq ? in.delta[bh * in.tq + row] : 0.0f;
    }
    __syncthreads();
    detail::rows_times_transposed<DK>(sts + wr * L::lds, L::lds, ks + wr * L::ldk, L::ldk, qs, L::ldk);   // S^T
    detail::rows_times_transposed<DV>(dpts + wr * L::lds, L::lds, vs + wr * L::ldv, L::ldv, dos, L::ldv); // dP^T
    __syncwarp();  // the warp's rows of sts and dpts are written
    for (int c = half; c < kCols; c += 2) {
      const std::int64_t i = i0 + c;
      const float lse_i = lse_s[c];
      float pz = 0.0f, dsv = 0.0f;
      if (i < in.tq && key_valid && j < visible_end(i, length, in.tq, in.tk, in.causal) && lse_i != -INFINITY) {
        float x, raw = 0.0f;
        if constexpr (E::kAny) {
          raw = sts[lr * L::lds + c] * in.scale + alibi_bias(in.terms, head, i, j);
          x = expression_score<E>(in, raw, cls, b, head, i, j) + mask_j;
        } else {
          x = pair_score(sts[lr * L::lds + c], in.scale, mask_j, alibi_bias(in.terms, head, i, j));
        }
        const float p = pair_weight(x, lse_i);
        const float z = pair_dropout(in.drop, p, keep_scale, bh, i, j, in.tq, in.tk, cache);
        const PairGrads grads = pair_grads(p, z, dpts[lr * L::lds + c], delta_s[c]);
        pz = grads.pz;
        dsv = grads.ds;
        if constexpr (E::kAny) dsv = expression_grad<E>(in, raw, dsv, b, head, i, j, false);
      }
      pzs[lr * L::ldp + c] = from_float<bf16>(pz);
      dsts[lr * L::ldp + c] = from_float<bf16>(dsv);
    }
    __syncwarp();  // the warp's rows of pzs and dsts are written; its reads of sts and dpts are done
    detail::accumulate_rows_times<DV>(dv_acc, pzs + wr * L::ldp, L::ldp, dos, L::ldv);  // dV += (P Z)^T dO
    detail::accumulate_rows_times<DK>(dk_acc, dsts + wr * L::ldp, L::ldp, qs, L::ldk);  // dK += dS^T Q
  }
  __syncthreads();  // every warp is done with sts and dpts, which the staging reuses
  float* stage = reinterpret_cast<float*>(tc_smem + L::s);
  detail::write_rows<DK>(dk + bh * in.tk * DK, j0, in.tk, in.scale, dk_acc, stage, L::ldg);
  detail::write_rows<DV>(dv + bh * in.tk * DV, j0, in.tk, 1.0f, dv_acc, stage, L::ldg);
}

}  // namespace attnlab::flash::cuda::tc
