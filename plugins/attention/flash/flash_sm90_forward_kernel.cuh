#pragma once
// The bf16 flash forward on Hopper (sm_90a): one block of two warpgroups per (head, tile of 128
// queries) walks the tiles of 128 keys its queries may see. Per key tile:
//   1. the next tile's K and V start loading into the other stage (cp.async, 16 bytes per
//      thread and access, zero-filled past the last key), so the copy overlaps steps 2-4;
//   2. S = Q K^T on the warpgroup MMA, Q and K read from swizzled shared memory (f32 in registers);
//   3. the online softmax on S's registers: scale, additive mask, causal and key-length masks and
//      the position score terms (ALiBi's distance bias, bucketed relative scores), the running
//      maximum m and denominator l per row (f32, reduced over the 4 threads of a row), the
//      running output rescaled by exp(m_old - m_new);
//   4. O += P V on the warpgroup MMA, P (bf16) straight from S's registers, V from shared memory;
//      with dropout, P's dropped weights are 0 and its kept ones scaled by 1 / (1 - p), the
//      weights flash_dropout.h names (the mask of the core's dropout), while l counts them all.
// Numerics as the sm_80 kernels: scores, statistics and O in f32, P rounded to bf16 for P V while
// l sums the unrounded weights; exponentials in base 2 (the scores are carried times log2 e).
// With relative positions' value terms (kValues) each weight also carries its bucket value into
// the output (flash_sm90_values.cuh). With score expressions E (kExtras path only: as in the sm_80
// kernels, flash_forward_kernels.cuh), each score passes through E::score after its position term
// and before the key's mask, key tiles that mask_mod removes are neither loaded nor computed (the
// pipeline loads the next visited tile) and E::keep is asked only on mixed tiles. Not served here (choose_kernel in flash_kernel_choice.h
// refuses them): one query, d_k != d_v. Include the CUDA API and the Hopper operations first:
// those of flash_sm90_ops.cuh (flash_sm90_forward.cu), or their host emulation (the emulated
// kernel test).
#include "flash_sm90_device.cuh"
#include "flash_sm90_values.cuh"

namespace attnlab::flash::cuda::sm90 {

// Block (bh = blockIdx.x, blockIdx.y) computes out and lse of queries i0 .. i0 + 127 of head bh
// (i0 = 128 blockIdx.y). Key tiles past the last key the tile's last query may see are not
// visited; the trip count is the block's, so every thread reaches every barrier. kExtras: the
// problem has an additive mask, score terms or dropout (without them the scores need only the
// causal and key-length limits, and the kernel reads nothing else). kValues (with kExtras): the
// problem has bucket values, and the block's dynamic shared memory ends with kBlockM x (2
// value_clip + 1) floats for them (sm90_value_smem). E: the site's score expressions
// (expr::NoExpressions: none).
template <int D, bool kExtras, bool kValues = false, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads, 1)
    forward_kernel(const kernels::Inputs<__nv_bfloat16> in,
                   __nv_bfloat16* __restrict__ out,  // (B, H, Tq, D)
                   float* __restrict__ lse) {        // (B, H, Tq)
  using namespace cute;
  using T = Tiles<D>;
  static_assert(kExtras || !kValues, "value terms take the kExtras path");
  static_assert(kExtras || !E::kAny, "score expressions take the kExtras path");
  const float scale_log2 = in.scale * kLog2e;
  extern __shared__ char sm90_smem[];
  Bf16* base = aligned_base(sm90_smem);
  Tensor sQ = make_tensor(make_smem_ptr(base), typename T::SmemQ{});
  auto sK = [&](int stage) {
    return make_tensor(make_smem_ptr(base + T::q_elements + stage * T::kv_elements), typename T::SmemK{});
  };
  auto sV = [&](int stage) {  // (d, key)
    return make_tensor(make_smem_ptr(base + T::q_elements + (kStages + stage) * T::kv_elements), typename T::SmemV{});
  };

  // The block's head, first query, key length and the keys its last query sees (the per-row
  // fields of the tile are per thread below).
  const kernels::QueryTile block = kernels::query_tile<kBlockM>(in, 0);
  const std::int64_t bh = block.bh, b = block.b, head = bh % in.heads, i0 = block.i0;
  const std::int64_t length = block.length, key_end = block.key_end;
  const int tiles = static_cast<int>((key_end + kBlockN - 1) / kBlockN);
  const __nv_bfloat16* k_head = in.k + bh * in.tk * D;
  const __nv_bfloat16* v_head = in.v + bh * in.tk * D;
  const __nv_bfloat16* mask_b = in.mask ? in.mask + b * in.tk : nullptr;

  // The key tiles mask_mod leaves (every tile without it).
  const auto visits = masked_walk<E, kBlockM, kBlockN>(
      in.expr, b, head, tiles, [i0](int t) { return TileCorner{i0, static_cast<std::int64_t>(t) * kBlockN}; });
  auto load_kv = [&](int tile, int stage) {
    const std::int64_t j0 = static_cast<std::int64_t>(tile) * kBlockN;
    auto k = sK(stage);
    auto v = sV(stage);
    load_tile<kBlockN, D>([&](int r, int c) { return &k(r, c); }, k_head, j0, key_end);
    load_tile<kBlockN, D>([&](int r, int c) { return &v(c, r); }, v_head, j0, key_end);
  };
  load_tile<kBlockM, D>([&](int r, int c) { return &sQ(r, c); }, in.q + bh * in.tq * D, i0, in.tq);
  int tile = visits.from(0);
  if (tile < tiles) load_kv(tile, 0);
  ops::commit();

  typename T::MmaS mma_s;
  typename T::MmaO mma_o;
  auto thr_s = mma_s.get_thread_slice(threadIdx.x);
  auto thr_o = mma_o.get_thread_slice(threadIdx.x);
  Tensor tSrS = partition_fragment_C(mma_s, Shape<Int<kBlockM>, Int<kBlockN>>{});
  Tensor tOrO = partition_fragment_C(mma_o, Shape<Int<kBlockM>, Int<D>>{});
  clear(tOrO);
  // (row, column) of every accumulator element in the block's tile, as rows x columns.
  const Tensor cS = thr_s.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
  const Tensor cO = thr_o.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<D>>{}));
  Tensor S = by_rows(tSrS);
  Tensor O = by_rows(tOrO);
  const Tensor rcS = by_rows(cS);
  const Tensor rcO = by_rows(cO);
  constexpr int kRows = decltype(size<0>(S))::value;  // 2: rows r and r + 8 of the warp's 16
  static_assert(decltype(size<0>(O))::value == kRows, "S and O hold the same rows");

  float m[kRows], l[kRows];  // running maximum (times log2 e) and denominator, per row
  std::int64_t row_end[kRows];
  const __nv_bfloat16* bucket_row[kRows];
  [[maybe_unused]] const float keep_scale = kernels::keep_scale(in.drop);
  [[maybe_unused]] KeepCache cache;  // the thread's last Philox block
  [[maybe_unused]] ValueTerms<kRows> values;
  if constexpr (kValues)
    values.start(reinterpret_cast<float*>(base + T::q_elements + 2 * kStages * T::kv_elements), in.terms.value_clip);
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = i0 + get<0>(rcS(r, 0));
    m[r] = -INFINITY;
    l[r] = 0.0f;
    row_end[r] = i < in.tq ? kernels::visible_end(i, length, in.tq, in.tk, in.causal) : 0;
    bucket_row[r] = i < in.tq ? kernels::score_row(in.terms, bh, in.tq, i) : nullptr;
  }

  // Visit n of the walk takes stage n % kStages.
  for (int visit = 0; tile < tiles; ++visit) {
    const int stage = visit % kStages;
    const std::int64_t j0 = static_cast<std::int64_t>(tile) * kBlockN;
    [[maybe_unused]] const unsigned char cls = visits.class_of(tile);
    const int next = visits.from(tile + 1);
    ops::wait_all();
    __syncthreads();  // this tile's K and V are in; every warpgroup is done with the other stage
    if (next < tiles) load_kv(next, (visit + 1) % kStages);
    ops::commit();

    ops::gemm_ss(mma_s, thr_s, sQ, sK(stage), tSrS);

    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      // Columns below `limit` are keys the row sees; in-tile indices are 32-bit.
      const std::int64_t left = row_end[r] - j0;
      const int limit = left <= 0 ? 0 : (left >= kBlockN ? kBlockN : static_cast<int>(left));
      float tile_max = -INFINITY;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(S); ++c) {
        const int col = get<1>(rcS(r, c));
        float s = -INFINITY;
        if (col < limit) {
          const std::int64_t i = i0 + get<0>(rcS(r, c)), j = j0 + col;
          if constexpr (E::kAny) {
            const float raw = S(r, c) * in.scale + pair_terms(0.0f, in.terms, head, bucket_row[r], in.terms.q_offset + i, j);
            s = (expression_score<E>(in, raw, cls, b, head, i, j) + mask_at(mask_b, j)) * kLog2e;
          } else {
            float add = 0.0f;
            if constexpr (kExtras) add = pair_terms(0.0f, in.terms, head, bucket_row[r], in.terms.q_offset + i, j, mask_b);
            s = pair_score_log2(S(r, c), scale_log2, add);
          }
        }
        S(r, c) = s;
        tile_max = fmaxf(tile_max, s);
      }
      // The row's 4 threads are lanes 4 r .. 4 r + 3 of a warp: flash's row group.
      const float m_new = fmaxf(m[r], kernels::group_max(tile_max));
      // alpha rescales what was summed under the old maximum; while every key seen is masked
      // (m_new = -inf) nothing is summed.
      const bool none = m_new == -INFINITY;
      const float alpha = none ? 1.0f : exp2f(m[r] - m_new);
      float sum = 0.0f;
      [[maybe_unused]] int distance0 = 0;  // j - p of the tile's first key (value terms)
      if constexpr (kValues) {
        values.rescale(r, alpha);  // before this tile's weights join
        distance0 = clamped_distance(j0, in.terms.q_offset + i0 + get<0>(rcS(r, 0)), values.clip);
      }
      CUTE_UNROLL
      for (int c = 0; c < size<1>(S); ++c) {
        const float w = none ? 0.0f : pair_weight_log2(S(r, c), m_new);
        sum += w;  // the denominator counts dropped weights too
        float kept = w;
        if constexpr (kExtras)
          if (in.drop.p > 0.0)
            kept = w * pair_dropout(in.drop, w, keep_scale, bh, i0 + get<0>(rcS(r, c)), j0 + get<1>(rcS(r, c)), in.tq,
                                    in.tk, cache);
        if constexpr (kValues) values.take(r, get<0>(rcS(r, c)), distance0 + get<1>(rcS(r, c)), S(r, c), w, kept);
        S(r, c) = kept;
      }
      l[r] = l[r] * alpha + kernels::group_sum(sum);
      m[r] = m_new;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(O); ++c) O(r, c) *= alpha;
    }

    // P in bf16, laid out as the A operand of O += P V.
    Tensor tSrP = bf16_copy(tSrS);
    Tensor tOrP = a_operand_view(tSrP);
    ops::gemm_rs(mma_o, thr_o, tOrP, sV(stage), tOrO);
    tile = next;
  }
  ops::wait_all();
  if constexpr (kValues) values.finish(O, rcO, m, l, in.terms.values, D, in.drop.p > 0.0 ? keep_scale : 1.0f);

  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = i0 + get<0>(rcO(r, 0));
    if (i >= in.tq) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;  // a row that sees no key gives 0
    __nv_bfloat16* o = out + (bh * in.tq + i) * D;
    CUTE_UNROLL
    for (int c = 0; c < size<1>(O); ++c) o[get<1>(rcO(r, c))] = __float2bfloat16_rn(O(r, c) * inv);
    if (threadIdx.x % 4 == 0)  // one thread of the row's four
      lse[bh * in.tq + i] = l[r] > 0.0f ? (m[r] + log2f(l[r])) / kLog2e : -INFINITY;
  }
}

}  // namespace attnlab::flash::cuda::sm90
