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
// served are the additive mask, ALiBi's distance bias (no gradient) and bucketed relative scores,
// whose gradient dq_kernel writes: d_scores[i, r] sums dS_ij over the keys j of bucket r. An
// inner bucket has one key, so the thread holding (i, j) writes it; the two clipped buckets sum
// runs of keys, in registers per thread over the walk and then over the row's four threads.
// Entries no visible key reaches stay as the launcher zeroed them. With dropout, Z the factor of
// each weight (0 dropped, 1 / (1 - p) kept: flash_dropout.h), dS = P (dP Z - D) and dV sums
// (P Z)^T dO. With relative positions' bucket values (kValues), dP gains dout_i . V_r and dq_kernel
// writes its block's share of their gradient (flash_sm90_values.cuh). With score expressions E
// (the kExtras path, as in the sm_80 kernels), each score passes through E::score after its
// position term and before the key's mask, dS back through E::grad (in dq_kernel also into the
// learned tensors' 64-bit fixed-point accumulators, once per pair: deterministic), and walked
// tiles that mask_mod removes are neither loaded nor computed. Include the CUDA API and the
// Hopper operations first: flash_sm90_ops.cuh (flash_sm90_backward.cu), or their host emulation
// (the emulated kernel test).
#include "flash_sm90_device.cuh"
#include "flash_sm90_values.cuh"

namespace attnlab::flash::cuda::sm90 {

// The backward's shared memory (BackwardTiles<D>::smem_bytes) from its 1024-aligned base: the
// block's two row tiles (Q and dO in dq_kernel, K and V in dkdv_kernel), then kStages of each of
// the two walked tiles (K and V, or Q and dO). `which` 0 or 1 names one of a pair. The loads zero
// the rows at or past `valid_rows` and are not waited for (the caller commits and waits).
template <int D>
struct BackwardSmem {
  using T = BackwardTiles<D>;
  Bf16* base;

  __device__ __forceinline__ auto rows(int which) const {
    return cute::make_tensor(cute::make_smem_ptr(base + which * T::rows_elements), typename T::Rows{});
  }
  __device__ __forceinline__ Bf16* walked(int which, int stage) const {
    return base + 2 * T::rows_elements + (which * kStages + stage) * T::walk_elements;
  }
  __device__ __forceinline__ auto walk(int which, int stage) const {  // (row, d)
    return cute::make_tensor(cute::make_smem_ptr(walked(which, stage)), typename T::Walk{});
  }
  __device__ __forceinline__ auto walk_t(int which, int stage) const {  // the same memory as (d, row)
    return cute::make_tensor(cute::make_smem_ptr(walked(which, stage)), typename T::WalkT{});
  }
  // What follows the tiles: dq_kernel's weights of the value terms (sm90_value_smem).
  __device__ __forceinline__ float* after_tiles() const {
    return reinterpret_cast<float*>(base + 2 * T::rows_elements + 2 * kStages * T::walk_elements);
  }
  // Rows [row0, row0 + kBlockM) of two [*, D] head matrices into the row tiles.
  __device__ __forceinline__ void load_rows(const __nv_bfloat16* a, const __nv_bfloat16* b, std::int64_t row0,
                                            std::int64_t valid_rows) const {
    auto ta = rows(0);
    auto tb = rows(1);
    load_tile<kBlockM, D>([&](int r, int c) { return &ta(r, c); }, a, row0, valid_rows);
    load_tile<kBlockM, D>([&](int r, int c) { return &tb(r, c); }, b, row0, valid_rows);
  }
  // Rows [row0, row0 + kBwdN) of two [*, D] head matrices into stage `stage` of the walked tiles.
  __device__ __forceinline__ void load_walked(int stage, const __nv_bfloat16* a, const __nv_bfloat16* b,
                                              std::int64_t row0, std::int64_t valid_rows) const {
    auto ta = walk(0, stage);
    auto tb = walk(1, stage);
    load_tile<kBwdN, D>([&](int r, int c) { return &ta(r, c); }, a, row0, valid_rows);
    load_tile<kBwdN, D>([&](int r, int c) { return &tb(r, c); }, b, row0, valid_rows);
  }
};

// dQ of queries i0 .. i0 + 127 of head bh (bh = blockIdx.x, i0 = 128 blockIdx.y), walking the key
// tiles the tile's last query sees (a block-uniform trip count: every thread reaches every
// barrier), and with bucket scores their gradient. kExtras: the problem has an additive mask,
// score terms (ALiBi's slopes, bucket scores) or dropout. kValues (with kExtras): bucket values,
// with u from bucket_dots_kernel; the block writes its share of their gradient to value_shares
// (block blockIdx.x * gridDim.y + blockIdx.y, buckets x D floats each), and its dynamic shared
// memory ends with sm90_value_smem bytes for the weights. E: the site's score expressions.
template <int D, bool kExtras, bool kValues = false, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads, 1)
    dq_kernel(const kernels::BackwardInputs<__nv_bfloat16> in,
              __nv_bfloat16* __restrict__ dq,        // (B, H, Tq, D)
              __nv_bfloat16* __restrict__ d_scores,  // (B, H, Tq, 2 score_clip + 1), zeroed; null without
              const float* __restrict__ u = nullptr,   // (B, H, Tq, 2 value_clip + 1) with kValues
              float* __restrict__ value_shares = nullptr) {
  using namespace cute;
  using T = BackwardTiles<D>;
  static_assert(kExtras || !kValues, "value terms take the kExtras path");
  static_assert(kExtras || !E::kAny, "score expressions take the kExtras path");
  const float scale_log2 = in.scale * kLog2e;
  extern __shared__ char sm90_smem[];
  const BackwardSmem<D> smem{aligned_base(sm90_smem)};  // rows: Q, dO; walked: K, V
  Tensor sQ = smem.rows(0);
  Tensor sdO = smem.rows(1);

  const kernels::QueryTile block = kernels::query_tile<kBlockM>(in, 0);
  const std::int64_t bh = block.bh, b = block.b, head = bh % in.heads, i0 = block.i0, length = block.length;
  const std::int64_t key_end = block.key_end;
  const int tiles = static_cast<int>((key_end + kBwdN - 1) / kBwdN);
  const __nv_bfloat16* k_head = in.k + bh * in.tk * D;
  const __nv_bfloat16* v_head = in.v + bh * in.tk * D;
  const __nv_bfloat16* mask_b = kernels::mask_row(in, b);
  // The key tiles mask_mod leaves (every tile without it).
  const auto visits = masked_walk<E, kBlockM, kBwdN>(
      in.expr, b, head, tiles, [i0](int t) { return TileCorner{i0, static_cast<std::int64_t>(t) * kBwdN}; });

  smem.load_rows(in.q + bh * in.tq * D, in.dout + bh * in.tq * D, i0, in.tq);
  int tile = visits.from(0);
  if (tile < tiles) smem.load_walked(0, k_head, v_head, static_cast<std::int64_t>(tile) * kBwdN, key_end);
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
  Tensor S = by_rows(tSrS);
  Tensor dP = by_rows(tSrdP);
  Tensor dQ = by_rows(tGrdQ);
  const Tensor rcS = by_rows(cS);
  const Tensor rcG = by_rows(cG);
  constexpr int kRows = decltype(size<0>(S))::value;  // 2: rows r and r + 8 of the warp's 16
  static_assert(decltype(size<0>(dQ))::value == kRows, "S and dQ hold the same rows");

  // Per row: the keys it sees, its log-sum-exp (times log2 e; -inf: the row sees no key, or is
  // past Tq) and D; with bucket scores, its row of them and of their gradient (null past Tq) and
  // this thread's sums for the two clipped buckets.
  float lse_log2[kRows], delta[kRows];
  std::int64_t row_end[kRows];
  const __nv_bfloat16* bucket_row[kRows];
  __nv_bfloat16* d_bucket_row[kRows];
  float clipped_low[kRows], clipped_high[kRows];
  const std::int64_t buckets = terms::bucket_count(in.terms.score_clip);
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = i0 + get<0>(rcS(r, 0));
    const bool valid = i < in.tq;
    row_end[r] = valid ? kernels::visible_end(i, length, in.tq, in.tk, in.causal) : 0;
    lse_log2[r] = valid ? in.lse[bh * in.tq + i] * kLog2e : -INFINITY;
    delta[r] = valid ? in.delta[bh * in.tq + i] : 0.0f;
    bucket_row[r] = valid ? kernels::score_row(in.terms, bh, in.tq, i) : nullptr;
    d_bucket_row[r] = valid && d_scores ? d_scores + (bh * in.tq + i) * buckets : nullptr;
    clipped_low[r] = clipped_high[r] = 0.0f;
  }
  [[maybe_unused]] const float keep_scale = kernels::keep_scale(in.drop);
  [[maybe_unused]] KeepCache cache;  // the thread's last Philox block
  [[maybe_unused]] int block_rows[kRows];
  [[maybe_unused]] BackwardValueTerms<kRows> values;
  if constexpr (kValues) {
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) block_rows[r] = get<0>(rcS(r, 0));
    values.start(smem.after_tiles(), u, in.terms.value_clip, bh, in.tq, i0, block_rows);
  }

  for (int visit = 0; tile < tiles; ++visit) {  // visit n takes stage n % kStages
    const int stage = visit % kStages;
    const std::int64_t j0 = static_cast<std::int64_t>(tile) * kBwdN;
    [[maybe_unused]] const unsigned char cls = visits.class_of(tile);
    const int next = visits.from(tile + 1);
    ops::wait_all();
    __syncthreads();  // this tile's K and V are in; every warpgroup is done with the other stage
    if (next < tiles)
      smem.load_walked((visit + 1) % kStages, k_head, v_head, static_cast<std::int64_t>(next) * kBwdN, key_end);
    ops::commit();

    ops::gemm_ss(mma_s, thr_s, sQ, smem.walk(0, stage), tSrS);    // S = Q K^T
    ops::gemm_ss(mma_s, thr_s, sdO, smem.walk(1, stage), tSrdP);  // dP = dO V^T

    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t left = row_end[r] - j0;  // columns below `limit` are keys the row sees
      const int limit = left <= 0 ? 0 : (left >= kBwdN ? kBwdN : static_cast<int>(left));
      [[maybe_unused]] int distance0 = 0;  // j - p of the tile's first key (value terms)
      if constexpr (kValues)
        distance0 = clamped_distance(j0, in.terms.q_offset + i0 + block_rows[r], values.clip);
      CUTE_UNROLL
      for (int c = 0; c < size<1>(S); ++c) {
        const int col = get<1>(rcS(r, c));
        float ds = 0.0f;
        if (col < limit && lse_log2[r] != -INFINITY) {
          [[maybe_unused]] const std::int64_t i = i0 + get<0>(rcS(r, c)), j = j0 + col, p = in.terms.q_offset + i;
          [[maybe_unused]] float raw = 0.0f;  // the score before E (expressions only)
          float x;                            // times log2 e
          if constexpr (E::kAny) {
            raw = S(r, c) * in.scale + pair_terms(0.0f, in.terms, head, bucket_row[r], p, j);
            x = (expression_score<E>(in, raw, cls, b, head, i, j) + mask_at(mask_b, j)) * kLog2e;
          } else {
            float add = 0.0f;
            if constexpr (kExtras) add = pair_terms(0.0f, in.terms, head, bucket_row[r], p, j, mask_b);
            x = pair_score_log2(S(r, c), scale_log2, add);
          }
          const float prob = pair_weight_log2(x, lse_log2[r]);
          float z = 1.0f;
          if constexpr (kExtras)
            if (in.drop.p > 0.0)
              z = pair_dropout(in.drop, prob, keep_scale, bh, i0 + get<0>(rcS(r, c)), j, in.tq, in.tk, cache);
          float dp = dP(r, c);
          if constexpr (kValues) dp += values.dots[r].at(distance0 + col);
          const PairGrads grads = pair_grads(prob, z, dp, delta[r]);
          if constexpr (kValues) values.take(r, block_rows[r], distance0 + col, grads.pz);
          ds = grads.ds;
          if constexpr (E::kAny) ds = expression_grad<E>(in, raw, ds, b, head, i, j, true);
          if constexpr (kExtras) {
            if (d_bucket_row[r]) {  // d(score term) = dS: into the bucket of (p, j)
              const std::int64_t n = terms::distance_bucket(p, j, in.terms.score_clip);
              if (n == 0) clipped_low[r] += ds;
              else if (n == buckets - 1) clipped_high[r] += ds;
              else d_bucket_row[r][n] = __float2bfloat16_rn(ds);
            }
          }
        }
        S(r, c) = ds;
      }
    }

    // dS in bf16, laid out as the A operand of dQ += dS K.
    Tensor tSrdS = bf16_copy(tSrS);
    Tensor tGrdS = a_operand_view(tSrdS);
    ops::gemm_rs(mma_g, thr_g, tGrdS, smem.walk_t(0, stage), tGrdQ);
    tile = next;
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

  // The clipped buckets: the row's four threads' sums (a row's columns are spread over lanes
  // 4r .. 4r + 3 of a warp), written by the first. d_scores is the block's, so all lanes shuffle.
  if constexpr (kExtras) {
    if (d_scores) {
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const float low = kernels::group_sum(clipped_low[r]), high = kernels::group_sum(clipped_high[r]);
        if (d_bucket_row[r] && threadIdx.x % 4 == 0) {
          d_bucket_row[r][0] = __float2bfloat16_rn(low);  // with clip 0, the one bucket (high is 0)
          if (buckets > 1) d_bucket_row[r][buckets - 1] = __float2bfloat16_rn(high);
        }
      }
    }
  }
  if constexpr (kValues)
    values.finish(sdO, block_rows,
                  value_shares + (static_cast<std::int64_t>(blockIdx.x) * gridDim.y + blockIdx.y) * values.buckets * D, D);
}

// dK and dV of keys j0 .. j0 + 127 of head bh (bh = blockIdx.x, j0 = 128 blockIdx.y), walking the
// query tiles that may see them (under causal masking, from the tile of the first query that
// sees key j0). A block whose keys are all padding writes zeros and returns before any barrier
// (the condition is the block's). kExtras, kValues (u) and E as for dq_kernel.
template <int D, bool kExtras, bool kValues = false, typename E = expr::NoExpressions>
__global__ void __launch_bounds__(kThreads, 1)
    dkdv_kernel(const kernels::BackwardInputs<__nv_bfloat16> in,
                __nv_bfloat16* __restrict__ dk,  // (B, H, Tk, D)
                __nv_bfloat16* __restrict__ dv,  // (B, H, Tk, D)
                const float* __restrict__ u = nullptr) {
  using namespace cute;
  using T = BackwardTiles<D>;
  static_assert(kExtras || !kValues, "value terms take the kExtras path");
  static_assert(kExtras || !E::kAny, "score expressions take the kExtras path");
  const float scale_log2 = in.scale * kLog2e;
  extern __shared__ char sm90_smem[];
  const BackwardSmem<D> smem{aligned_base(sm90_smem)};  // rows: K, V; walked: Q, dO
  Tensor sK = smem.rows(0);
  Tensor sV = smem.rows(1);

  const kernels::KeyTile block = kernels::key_tile<kBlockM>(in, 0);
  const std::int64_t bh = block.bh, head = bh % in.heads, j0 = block.j0, length = block.length;
  if (j0 >= length) {
    kernels::zero_rows<kBlockM, D, kThreads>(dk + bh * in.tk * D, j0, in.tk);
    kernels::zero_rows<kBlockM, D, kThreads>(dv + bh * in.tk * D, j0, in.tk);
    return;
  }
  const __nv_bfloat16* q_head = in.q + bh * in.tq * D;
  const __nv_bfloat16* do_head = in.dout + bh * in.tq * D;
  const __nv_bfloat16* mask_b = kernels::mask_row(in, block.b);
  // Query i sees key j0 only when i >= j0 - (tk - tq) under causal masking.
  std::int64_t first = in.causal ? j0 - (in.tk - in.tq) : 0;
  first = first < 0 ? 0 : first;
  const std::int64_t q_begin = first / kBwdN * kBwdN;
  const int tiles = q_begin < in.tq ? static_cast<int>((in.tq - q_begin + kBwdN - 1) / kBwdN) : 0;
  // The query tiles mask_mod leaves (every tile without it).
  const auto visits = masked_walk<E, kBwdN, kBlockM>(in.expr, block.b, head, tiles, [q_begin, j0](int t) {
    return TileCorner{q_begin + static_cast<std::int64_t>(t) * kBwdN, j0};
  });

  smem.load_rows(in.k + bh * in.tk * D, in.v + bh * in.tk * D, j0, length);
  int tile = visits.from(0);
  if (tile < tiles) smem.load_walked(0, q_head, do_head, q_begin + static_cast<std::int64_t>(tile) * kBwdN, in.tq);
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
  Tensor St = by_rows(tSrS);
  Tensor dPt = by_rows(tSrdP);
  Tensor dK = by_rows(tGrdK);
  Tensor dV = by_rows(tGrdV);
  const Tensor rcS = by_rows(cS);
  const Tensor rcG = by_rows(cG);
  constexpr int kRows = decltype(size<0>(St))::value;
  static_assert(decltype(size<0>(dK))::value == kRows, "S^T and dK hold the same rows");

  [[maybe_unused]] const float keep_scale = kernels::keep_scale(in.drop);
  [[maybe_unused]] KeepCache cache;  // the thread's last Philox block
  // Per row (key): its additive mask (0 past the real keys, which no query sees).
  std::int64_t key[kRows];
  float mask_add[kRows];
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    key[r] = j0 + get<0>(rcS(r, 0));
    mask_add[r] = kExtras && mask_b && key[r] < length ? kernels::to_float(mask_b[key[r]]) : 0.0f;
  }

  for (int visit = 0; tile < tiles; ++visit) {  // visit n takes stage n % kStages
    const int stage = visit % kStages;
    const std::int64_t i0 = q_begin + static_cast<std::int64_t>(tile) * kBwdN;
    [[maybe_unused]] const unsigned char cls = visits.class_of(tile);
    const int next = visits.from(tile + 1);
    ops::wait_all();
    __syncthreads();  // this tile's Q and dO are in; every warpgroup is done with the other stage
    if (next < tiles)
      smem.load_walked((visit + 1) % kStages, q_head, do_head, q_begin + static_cast<std::int64_t>(next) * kBwdN, in.tq);
    ops::commit();

    ops::gemm_ss(mma_s, thr_s, sK, smem.walk(0, stage), tSrS);   // S^T = K Q^T
    ops::gemm_ss(mma_s, thr_s, sV, smem.walk(1, stage), tSrdP);  // dP^T = V dO^T

    // Column by column: a column is one query, whose statistics and visible keys the rows share.
    CUTE_UNROLL
    for (int c = 0; c < size<1>(St); ++c) {
      const std::int64_t i = i0 + get<1>(rcS(0, c));
      const bool valid = i < in.tq;
      const float lse_log2 = valid ? in.lse[bh * in.tq + i] * kLog2e : -INFINITY;
      const float delta = valid ? in.delta[bh * in.tq + i] : 0.0f;
      const std::int64_t end = valid ? kernels::visible_end(i, length, in.tq, in.tk, in.causal) : 0;
      const __nv_bfloat16* bucket_row = valid ? kernels::score_row(in.terms, bh, in.tq, i) : nullptr;
      [[maybe_unused]] BucketDots dots;
      if constexpr (kValues) dots.load(u, bh * in.tq + i, static_cast<int>(in.terms.value_clip), valid);
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        float prob = 0.0f, ds = 0.0f;
        if (key[r] < end && lse_log2 != -INFINITY) {
          [[maybe_unused]] float raw = 0.0f;  // the score before E (expressions only)
          float x;                            // times log2 e
          if constexpr (E::kAny) {
            raw = St(r, c) * in.scale + pair_terms(0.0f, in.terms, head, bucket_row, in.terms.q_offset + i, key[r]);
            x = (expression_score<E>(in, raw, cls, block.b, head, i, key[r]) + mask_add[r]) * kLog2e;
          } else {
            float add = mask_add[r];  // the key's mask, held per row
            if constexpr (kExtras) add = pair_terms(add, in.terms, head, bucket_row, in.terms.q_offset + i, key[r]);
            x = pair_score_log2(St(r, c), scale_log2, add);
          }
          const float p = pair_weight_log2(x, lse_log2);
          float z = 1.0f;
          if constexpr (kExtras)
            if (in.drop.p > 0.0) z = pair_dropout(in.drop, p, keep_scale, bh, i, key[r], in.tq, in.tk, cache);
          float dp = dPt(r, c);
          if constexpr (kValues) {
            const std::int64_t distance = key[r] - (in.terms.q_offset + i);  // |distance| < Tk
            dp += dots.at(static_cast<int>(distance));
          }
          const PairGrads grads = pair_grads(p, z, dp, delta);
          ds = grads.ds;
          if constexpr (E::kAny) ds = expression_grad<E>(in, raw, ds, block.b, head, i, key[r], false);
          prob = grads.pz;  // dV sums (P Z)^T dO
        }
        St(r, c) = prob;
        dPt(r, c) = ds;
      }
    }

    // (P Z)^T and dS^T in bf16, laid out as the A operands of dV += (P Z)^T dO and dK += dS^T Q.
    Tensor tSrP = bf16_copy(tSrS);
    Tensor tSrdS = bf16_copy(tSrdP);
    Tensor tGrP = a_operand_view(tSrP);
    Tensor tGrdS = a_operand_view(tSrdS);
    ops::gemm_rs(mma_g, thr_g, tGrP, smem.walk_t(1, stage), tGrdV);   // dV += P^T dO
    ops::gemm_rs(mma_g, thr_g, tGrdS, smem.walk_t(0, stage), tGrdK);  // dK += dS^T Q
    tile = next;
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
