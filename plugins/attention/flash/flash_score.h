#pragma once
// The per-score sequence of every flash kernel (FMA, tensor-core and Hopper; forward, dQ and
// dK/dV), written once. For a pair (query i, key j) the query sees, from its score s = q_i . k_j:
//   x  = s scale + the additive terms (the key's mask, the position score term)  pair_score
//   P  = exp(x - r), r the row's running maximum (forward) or logsumexp (backward) pair_weight
//   Z  = dropout's factor: 1 / (1 - p) kept, 0 dropped, 1 without dropout         pair_dropout
//   dS = P (dP Z - D) and P Z, the weight dV sums                                 pair_grads
// (pairs the query does not see get -inf or 0 from the kernels' walks, which know their tiles).
// The FMA and tensor-core kernels work in natural units; the Hopper kernels carry x times log2 e
// and exponentiate in base 2 (pair_score_log2, pair_weight_log2). Each kernel adds its terms in
// its own order (the FMA kernels the position term, then the mask; the tensor-core kernels the
// mask, then ALiBi's bias; the Hopper kernels sum them first), which pair_score keeps: a term's
// place decides a rounding. pair_score evaluates the terms before the product; the two forwards
// that form the product first (FMA and tensor cores) keep their own line, as the compiler would
// otherwise fuse the product with a sum it keeps apart there, or lay the loop out otherwise. The
// kernels on the GPU and their host emulation in the tests both call these.
#include "attnlab/device_std.h"

#include "attnlab/host_device.h"
#include "flash_dropout.h"

namespace attnlab::flash::cuda::kernels {

inline constexpr float kLog2e = 1.4426950408889634f;

// s scale + a + b, added in that order.
ATTNLAB_HOST_DEVICE float pair_score(float s, float scale, float a, float b) { return s * scale + a + b; }
// The same in log2 units: s (scale log2 e) + terms log2 e in one fused multiply-add, `terms` the
// sum of the additive terms and scale_log2 = scale log2 e.
ATTNLAB_HOST_DEVICE float pair_score_log2(float s, float scale_log2, float terms) {
  return fmaf(s, scale_log2, terms * kLog2e);
}

// The weight of score x (with its terms) under r: the running maximum, or the logsumexp.
ATTNLAB_HOST_DEVICE float pair_weight(float x, float r) { return expf(x - r); }
ATTNLAB_HOST_DEVICE float pair_weight_log2(float x, float r) { return exp2f(x - r); }

// Dropout's factor of weight p of pair (i, j) in head row bh (of B H) of a [B, H, Tq, Tk] weights
// tensor: drop_factor at the pair's Philox index (flash_dropout.h).
ATTNLAB_HOST_DEVICE float pair_dropout(const DropoutStream& d, float p, float keep_scale, std::int64_t bh,
                                       std::int64_t i, std::int64_t j, std::int64_t tq, std::int64_t tk,
                                       KeepCache& cache) {
  return drop_factor(d, p, keep_scale, weight_index(bh, i, j, tq, tk), cache);
}

// The backward's two products of a pair with weight p, dropout factor z, dP = dout_i . v_j (with
// the pair's bucket value where the problem has them) and D = rowsum(dout * out) of query i.
struct PairGrads {
  float pz;  // P Z: the weight of dout_i in dV_j
  float ds;  // dS = P (dP Z - D): the score's gradient (before the scale)
};
ATTNLAB_HOST_DEVICE PairGrads pair_grads(float p, float z, float dp, float delta) {
  return {p * z, p * (dp * z - delta)};
}

}  // namespace attnlab::flash::cuda::kernels
