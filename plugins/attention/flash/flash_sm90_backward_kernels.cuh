#pragma once
// The bf16 flash backward on Hopper (sm_90a): FlashAttention-2's recomputation, as the sm_80
// kernels (flash_tc_backward_kernels.cuh) do it, on the warpgroup MMA. D = rowsum(dout * out)
// comes first from the FMA path's delta_kernel. Two kernels, each a block of two warpgroups over
// 128 rows walking tiles of 64 (BackwardTiles in flash_sm90_layouts.cuh), the next walked tile
// loading (cp.async) into the other stage while the current one is used:
//   dq_kernel:   per tile of 128 queries, over the key tiles they see: S = Q K^T, dP = dO V^T,
//                then in S's registers P = exp(scale s + mask + bias - lse) and
//                dS = P (dP - D), and dQ += dS K, the accumulator in registers for the walk;
//   dkdv_kernel: per tile of 128 keys, over the query tiles that see them: S^T = K Q^T and
//                dP^T = V dO^T, then P^T and dS^T in their registers, dV += P^T dO and
//                dK += dS^T Q.
// dQ and dK are scaled by the softmax scale at the end. Numerics as the sm_80 kernels: S, dP, P,
// dS, D and the accumulators in f32, P and dS rounded to bf16 for their products; each kernel
// sums in a fixed order (no atomics), so the gradients are deterministic. The score terms
// served are the additive mask and ALiBi's distance bias (no gradient); bucketed relative scores
// and dropout stay on the FMA and sm_80 kernels (sm90_takes_backward in flash_sm90.h). Include
// the CUDA API and the Hopper operations first: flash_sm90_ops.cuh (flash_sm90_backward.cu), or
// their host emulation (the emulated kernel test).
#include "flash_sm90_device.cuh"

namespace attnlab::flash::cuda::sm90 {

// dQ of queries i0 .. i0 + 127 of head bh (bh = blockIdx.x, i0 = 128 blockIdx.y), walking the key
// tiles the tile's last query sees (a block-uniform trip count: every thread reaches every
// barrier). kExtras: the problem has an additive mask or ALiBi's slopes.
template <int D, bool kExtras>
__global__ void __launch_bounds__(kThreads, 1)
    dq_kernel(const kernels::BackwardInputs<__nv_bfloat16> in,
              __nv_bfloat16* __restrict__ dq) {  // (B, H, Tq, D)
  using namespace cute;
  using T = BackwardTiles<D>;
  const float scale_log2 = in.scale * kLog2e;
  extern __shared__ char sm90_smem[];
  Bf16* base = aligned_base(sm90_smem);
  Tensor sQ = make_tensor(make_smem_ptr(base), typename T::Rows{});
  Tensor sdO = make_tensor(make_smem_ptr(base + T::rows_elements), typename T::Rows{});
  auto walked = [&](int which, int stage) {  // which 0: K, 1: V
    return make_smem_ptr(base + 2 * T::rows_elements + (which * kStages + stage) * T::walk_elements);
  };
  auto sK = [&](int stage) { return make_tensor(walked(0, stage), typename T::Walk{}); };
  auto sKt = [&](int stage) { return make_tensor(walked(0, stage), typename T::WalkT{}); };  // (d, key)
  auto sV = [&](int stage) { return make_tensor(walked(1, stage), typename T::Walk{}); };

  const kernels::QueryTile block = kernels::query_tile<kBlockM>(in, 0);
  const std::int64_t bh = block.bh, head = bh % in.heads, i0 = block.i0, length = block.length;
  const std::int64_t key_end = block.key_end;
  const int tiles = static_cast<int>((key_end + kBwdN - 1) / kBwdN);
  const __nv_bfloat16* k_head = in.k + bh * in.tk * D;
  const __nv_bfloat16* v_head = in.v + bh * in.tk * D;
  const __nv_bfloat16* mask_b = kernels::mask_row(in, block.b);

  auto load_kv = [&](int tile, int stage) {
    const std::int64_t j0 = static_cast<std::int64_t>(tile) * kBwdN;
    auto k = sK(stage);
    auto v = sV(stage);
    load_tile<kBwdN, D>([&](int r, int c) { return &k(r, c); }, k_head, j0, key_end);
    load_tile<kBwdN, D>([&](int r, int c) { return &v(r, c); }, v_head, j0, key_end);
  };
  load_tile<kBlockM, D>([&](int r, int c) { return &sQ(r, c); }, in.q + bh * in.tq * D, i0, in.tq);
  load_tile<kBlockM, D>([&](int r, int c) { return &sdO(r, c); }, in.dout + bh * in.tq * D, i0, in.tq);
  if (tiles > 0) load_kv(0, 0);
  ops::commit();

  typename T::MmaS mma_s;
  typename T::MmaG mma_g;
  auto thr_s = mma_s.get_thread_slice(threadIdx.x);
  auto thr_g = mma_g.get_thread_slice(threadIdx.x);
  Tensor tSrS = partition_fragment_C(mma_s, Shape<Int<kBlockM>, Int<kBwdN>>{});
  Tensor tSrdP = partition_fragment_C(mma_s, Shape<Int<kBlockM>, Int<kBwdN>>{});
  Tensor tGrdQ = partition_fragment_C(mma_g, Shape<Int<kBlockM>, Int<D>>{});
  clear(tGrdQ);
  const Tensor cS = thr_s.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBwdN>>{}));
  const Tensor cG = thr_g.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<D>>{}));
  Tensor S = make_tensor(tSrS.data(), rows_by_columns(tSrS.layout()));
  Tensor dP = make_tensor(tSrdP.data(), rows_by_columns(tSrdP.layout()));
  Tensor dQ = make_tensor(tGrdQ.data(), rows_by_columns(tGrdQ.layout()));
  const Tensor rcS = make_tensor(cS.data(), rows_by_columns(cS.layout()));
  const Tensor rcG = make_tensor(cG.data(), rows_by_columns(cG.layout()));
  constexpr int kRows = decltype(size<0>(S))::value;  // 2: rows r and r + 8 of the warp's 16
  static_assert(decltype(size<0>(dQ))::value == kRows, "S and dQ hold the same rows");

  // Per row: the keys it sees, its log-sum-exp (times log2 e; -inf: the row sees no key, or is
  // past Tq) and D.
  float lse_log2[kRows], delta[kRows];
  std::int64_t row_end[kRows];
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = i0 + get<0>(rcS(r, 0));
    const bool valid = i < in.tq;
    row_end[r] = valid ? kernels::visible_end(i, length, in.tq, in.tk, in.causal) : 0;
    lse_log2[r] = valid ? in.lse[bh * in.tq + i] * kLog2e : -INFINITY;
    delta[r] = valid ? in.delta[bh * in.tq + i] : 0.0f;
  }

  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile % kStages;
    const std::int64_t j0 = static_cast<std::int64_t>(tile) * kBwdN;
    ops::wait_all();
    __syncthreads();  // this tile's K and V are in; every warpgroup is done with the other stage
    if (tile + 1 < tiles) load_kv(tile + 1, (tile + 1) % kStages);
    ops::commit();

    ops::gemm_ss(mma_s, thr_s, sQ, sK(stage), tSrS);
    ops::gemm_ss(mma_s, thr_s, sdO, sV(stage), tSrdP);

    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t left = row_end[r] - j0;  // columns below `limit` are keys the row sees
      const int limit = left <= 0 ? 0 : (left >= kBwdN ? kBwdN : static_cast<int>(left));
      CUTE_UNROLL
      for (int c = 0; c < size<1>(S); ++c) {
        const int col = get<1>(rcS(r, c));
        float ds = 0.0f;
        if (col < limit && lse_log2[r] != -INFINITY) {
          float add = 0.0f;
          if constexpr (kExtras) {
            const std::int64_t j = j0 + col, p = in.terms.q_offset + i0 + get<0>(rcS(r, c));
            if (mask_b) add += kernels::to_float(mask_b[j]);
            if (in.terms.slopes) add += terms::distance_bias(in.terms.slopes[head], p, j);
          }
          const float prob = exp2f(fmaf(S(r, c), scale_log2, add * kLog2e) - lse_log2[r]);
          ds = prob * (dP(r, c) - delta[r]);
        }
        S(r, c) = ds;
      }
    }

    // dS in bf16, laid out as the A operand of dQ += dS K.
    Tensor tSrdS = make_tensor<Bf16>(tSrS.layout());
    CUTE_UNROLL
    for (int e = 0; e < size(tSrS); ++e) tSrdS(e) = static_cast<Bf16>(tSrS(e));
    Tensor tGrdS = make_tensor(tSrdS.data(), as_a_operand(tSrdS.layout()));
    ops::gemm_rs(mma_g, thr_g, tGrdS, sKt(stage), tGrdQ);
  }
  ops::wait_all();

  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = i0 + get<0>(rcG(r, 0));
    if (i >= in.tq) continue;
    __nv_bfloat16* row = dq + (bh * in.tq + i) * D;
    CUTE_UNROLL
    for (int c = 0; c < size<1>(dQ); ++c) row[get<1>(rcG(r, c))] = __float2bfloat16_rn(dQ(r, c) * in.scale);
  }
}

// dK and dV of keys j0 .. j0 + 127 of head bh (bh = blockIdx.x, j0 = 128 blockIdx.y), walking the
// query tiles that may see them (under causal masking, from the tile of the first query that
// sees key j0). A block whose keys are all padding writes zeros and returns before any barrier
// (the condition is the block's).
template <int D, bool kExtras>
__global__ void __launch_bounds__(kThreads, 1)
    dkdv_kernel(const kernels::BackwardInputs<__nv_bfloat16> in,
                __nv_bfloat16* __restrict__ dk,    // (B, H, Tk, D)
                __nv_bfloat16* __restrict__ dv) {  // (B, H, Tk, D)
  using namespace cute;
  using T = BackwardTiles<D>;
  const float scale_log2 = in.scale * kLog2e;
  extern __shared__ char sm90_smem[];
  Bf16* base = aligned_base(sm90_smem);
  Tensor sK = make_tensor(make_smem_ptr(base), typename T::Rows{});
  Tensor sV = make_tensor(make_smem_ptr(base + T::rows_elements), typename T::Rows{});
  auto walked = [&](int which, int stage) {  // which 0: Q, 1: dO
    return make_smem_ptr(base + 2 * T::rows_elements + (which * kStages + stage) * T::walk_elements);
  };
  auto sQ = [&](int stage) { return make_tensor(walked(0, stage), typename T::Walk{}); };
  auto sQt = [&](int stage) { return make_tensor(walked(0, stage), typename T::WalkT{}); };    // (d, query)
  auto sdO = [&](int stage) { return make_tensor(walked(1, stage), typename T::Walk{}); };
  auto sdOt = [&](int stage) { return make_tensor(walked(1, stage), typename T::WalkT{}); };  // (d, query)

  const kernels::KeyTile block = kernels::key_tile<kBlockM>(in, 0);
  const std::int64_t bh = block.bh, head = bh % in.heads, j0 = block.j0, length = block.length;
  if (j0 >= length) {
    for (int e = threadIdx.x; e < kBlockM * D; e += kThreads)
      if (j0 + e / D < in.tk) {
        dk[(bh * in.tk + j0) * D + e] = __float2bfloat16_rn(0.0f);
        dv[(bh * in.tk + j0) * D + e] = __float2bfloat16_rn(0.0f);
      }
    return;
  }
  const __nv_bfloat16* q_head = in.q + bh * in.tq * D;
  const __nv_bfloat16* do_head = in.dout + bh * in.tq * D;
  // Query i sees key j0 only when i >= j0 - (tk - tq) under causal masking.
  std::int64_t first = in.causal ? j0 - (in.tk - in.tq) : 0;
  first = first < 0 ? 0 : first;
  const std::int64_t q_begin = first / kBwdN * kBwdN;
  const int tiles = q_begin < in.tq ? static_cast<int>((in.tq - q_begin + kBwdN - 1) / kBwdN) : 0;

  auto load_qdo = [&](int tile, int stage) {
    const std::int64_t i0 = q_begin + static_cast<std::int64_t>(tile) * kBwdN;
    auto q = sQ(stage);
    auto o = sdO(stage);
    load_tile<kBwdN, D>([&](int r, int c) { return &q(r, c); }, q_head, i0, in.tq);
    load_tile<kBwdN, D>([&](int r, int c) { return &o(r, c); }, do_head, i0, in.tq);
  };
  load_tile<kBlockM, D>([&](int r, int c) { return &sK(r, c); }, in.k + bh * in.tk * D, j0, length);
  load_tile<kBlockM, D>([&](int r, int c) { return &sV(r, c); }, in.v + bh * in.tk * D, j0, length);
  if (tiles > 0) load_qdo(0, 0);
  ops::commit();

  typename T::MmaS mma_s;
  typename T::MmaG mma_g;
  auto thr_s = mma_s.get_thread_slice(threadIdx.x);
  auto thr_g = mma_g.get_thread_slice(threadIdx.x);
  Tensor tSrS = partition_fragment_C(mma_s, Shape<Int<kBlockM>, Int<kBwdN>>{});   // S^T: (key, query)
  Tensor tSrdP = partition_fragment_C(mma_s, Shape<Int<kBlockM>, Int<kBwdN>>{});  // dP^T
  Tensor tGrdK = partition_fragment_C(mma_g, Shape<Int<kBlockM>, Int<D>>{});
  Tensor tGrdV = partition_fragment_C(mma_g, Shape<Int<kBlockM>, Int<D>>{});
  clear(tGrdK);
  clear(tGrdV);
  const Tensor cS = thr_s.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBwdN>>{}));
  const Tensor cG = thr_g.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<D>>{}));
  Tensor St = make_tensor(tSrS.data(), rows_by_columns(tSrS.layout()));
  Tensor dPt = make_tensor(tSrdP.data(), rows_by_columns(tSrdP.layout()));
  Tensor dK = make_tensor(tGrdK.data(), rows_by_columns(tGrdK.layout()));
  Tensor dV = make_tensor(tGrdV.data(), rows_by_columns(tGrdV.layout()));
  const Tensor rcS = make_tensor(cS.data(), rows_by_columns(cS.layout()));
  const Tensor rcG = make_tensor(cG.data(), rows_by_columns(cG.layout()));
  constexpr int kRows = decltype(size<0>(St))::value;
  static_assert(decltype(size<0>(dK))::value == kRows, "S^T and dK hold the same rows");

  // Per row (key): its additive mask (0 past the real keys, which no query sees).
  std::int64_t key[kRows];
  float mask_add[kRows];
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    key[r] = j0 + get<0>(rcS(r, 0));
    mask_add[r] = kExtras && in.mask && key[r] < length ? kernels::to_float(in.mask[block.b * in.tk + key[r]]) : 0.0f;
  }

  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile % kStages;
    const std::int64_t i0 = q_begin + static_cast<std::int64_t>(tile) * kBwdN;
    ops::wait_all();
    __syncthreads();  // this tile's Q and dO are in; every warpgroup is done with the other stage
    if (tile + 1 < tiles) load_qdo(tile + 1, (tile + 1) % kStages);
    ops::commit();

    ops::gemm_ss(mma_s, thr_s, sK, sQ(stage), tSrS);
    ops::gemm_ss(mma_s, thr_s, sV, sdO(stage), tSrdP);

    // Column by column: a column is one query, whose statistics and visible keys the rows share.
    CUTE_UNROLL
    for (int c = 0; c < size<1>(St); ++c) {
      const std::int64_t i = i0 + get<1>(rcS(0, c));
      const bool valid = i < in.tq;
      const float lse_log2 = valid ? in.lse[bh * in.tq + i] * kLog2e : -INFINITY;
      const float delta = valid ? in.delta[bh * in.tq + i] : 0.0f;
      const std::int64_t end = valid ? kernels::visible_end(i, length, in.tq, in.tk, in.causal) : 0;
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        float prob = 0.0f, ds = 0.0f;
        if (key[r] < end && lse_log2 != -INFINITY) {
          float add = mask_add[r];
          if constexpr (kExtras)
            if (in.terms.slopes) add += terms::distance_bias(in.terms.slopes[head], in.terms.q_offset + i, key[r]);
          prob = exp2f(fmaf(St(r, c), scale_log2, add * kLog2e) - lse_log2);
          ds = prob * (dPt(r, c) - delta);
        }
        St(r, c) = prob;
        dPt(r, c) = ds;
      }
    }

    // P^T and dS^T in bf16, laid out as the A operands of dV += P^T dO and dK += dS^T Q.
    Tensor tSrP = make_tensor<Bf16>(tSrS.layout());
    Tensor tSrdS = make_tensor<Bf16>(tSrdP.layout());
    CUTE_UNROLL
    for (int e = 0; e < size(tSrS); ++e) {
      tSrP(e) = static_cast<Bf16>(tSrS(e));
      tSrdS(e) = static_cast<Bf16>(tSrdP(e));
    }
    Tensor tGrP = make_tensor(tSrP.data(), as_a_operand(tSrP.layout()));
    Tensor tGrdS = make_tensor(tSrdS.data(), as_a_operand(tSrdS.layout()));
    ops::gemm_rs(mma_g, thr_g, tGrP, sdOt(stage), tGrdV);
    ops::gemm_rs(mma_g, thr_g, tGrdS, sQt(stage), tGrdK);
  }
  ops::wait_all();

  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t j = j0 + get<0>(rcG(r, 0));
    if (j >= in.tk) continue;
    __nv_bfloat16* k_row = dk + (bh * in.tk + j) * D;
    __nv_bfloat16* v_row = dv + (bh * in.tk + j) * D;
    CUTE_UNROLL
    for (int c = 0; c < size<1>(dK); ++c) {
      const int col = get<1>(rcG(r, c));
      k_row[col] = __float2bfloat16_rn(dK(r, c) * in.scale);
      v_row[col] = __float2bfloat16_rn(dV(r, c));
    }
  }
}

}  // namespace attnlab::flash::cuda::sm90
