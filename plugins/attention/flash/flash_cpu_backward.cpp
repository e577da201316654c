// The backward of flash's CPU path (FlashAttention-2's, on the CPU): one task per (batch, head),
// walking its query tiles and their key tiles in a fixed order, recomputing each tile's weights
// from the forward's logsumexp. Per tile, with P the weights and Z dropout's factors:
//   dV += (P Z)^T dO,   dP = dO V^T (+ the bucket values' dot),   dS = P (dP Z - D)
//   dS = dS d score_mod / d score (the expressions' backward; their learned tensors' shares)
//   dQ += scale dS K,   dK += scale dS^T Q
// The bucket values' and the expressions' tensors' gradients are summed per task and the tasks'
// sums added in task order: the same bits for any thread count.
#include "flash_cpu.h"

namespace attnlab::flash::detail {
namespace {

using namespace cpu_path;

template <typename T>
struct BackwardScratch {
  std::vector<T> kt, vt, delta;  // K and V of the task's head transposed, D = rowsum(dO * O)
  std::vector<T> s = tile_buffer<T>(), raw = tile_buffer<T>(), dp = tile_buffer<T>();
};

template <typename T>
struct HeadGrads {
  const T* out;   // [Tq, dv]
  const T* lse;   // [Tq]
  const T* dout;  // [Tq, dv]
  T* dq;          // [Tq, dk]
  T* dk;          // [Tk, dk]
  T* dv;          // [Tk, dv]
  double* expr_shares;  // the expressions' learned tensors' share of this head, or null
};

template <typename T>
void backward_head(const Head<T>& h, const PositionTerms<T>& pt, const Expressions<T>& ex, const Geometry& g,
                   const FlashOptions& o, const HeadGrads<T>& d, BackwardScratch<T>& w) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const T scale = static_cast<T>(o.scale);
  const T keep_scale = static_cast<T>(1.0 / (1.0 - o.dropout));
  const DropoutStream stream{o.dropout, o.seed, o.offset, o.seed_slot};
  KeepCache cache;
  std::fill(d.dq, d.dq + g.tq * g.dk, T(0));
  std::fill(d.dk, d.dk + g.tk * g.dk, T(0));
  std::fill(d.dv, d.dv + g.tk * g.dv, T(0));
  if (pt.d_scores) std::fill(pt.d_scores, pt.d_scores + g.tq * terms::bucket_count(pt.score_clip), T(0));
  if (pt.d_values) std::fill(pt.d_values, pt.d_values + terms::bucket_count(pt.value_clip) * g.dv, T(0));
  w.kt.resize(static_cast<std::size_t>(g.dk * g.tk));
  w.vt.resize(static_cast<std::size_t>(g.dv * g.tk));
  transpose(h.k, g.tk, g.dk, w.kt.data());
  transpose(h.v, g.tk, g.dv, w.vt.data());
  // D_i = sum_j P_ij dP_ij = dout_i . out_i (dropout included, since out holds the dropped weights).
  w.delta.resize(static_cast<std::size_t>(g.tq));
  for (std::int64_t i = 0; i < g.tq; ++i) {
    T sum = 0;
    for (std::int64_t e = 0; e < g.dv; ++e) sum += d.dout[i * g.dv + e] * d.out[i * g.dv + e];
    w.delta[static_cast<std::size_t>(i)] = sum;
  }
  T* s = w.s.data();
  T* dp = w.dp.data();
  T* raw = ex.any() ? w.raw.data() : nullptr;
  for (std::int64_t i0 = 0; i0 < g.tq; i0 += kRows) {
    const std::int64_t rows = std::min(kRows, g.tq - i0);
    const T* q_tile = h.q + i0 * g.dk;
    const T* do_tile = d.dout + i0 * g.dv;
    for_each_key_tile(h, ex, g, o.causal, i0, rows, [&](std::int64_t j0, std::int64_t cols, expr::TileMask cls) {
      score_tile(h, w.kt.data(), pt, ex, g, o, i0, rows, j0, cols, cls, s, raw);
      // The weights, recomputed from the logsumexp (0 for a row that sees no key).
      for (std::int64_t r = 0; r < rows; ++r) {
        const T l = d.lse[i0 + r];
        if (l == kNegInf) std::fill(s + r * kCols, s + r * kCols + cols, T(0));
        else exp_row(s + r * kCols, l, cols);
      }
      cpu::gemm(false, false, rows, cols, g.dv, T(1), do_tile, g.dv, w.vt.data() + j0, g.tk, T(0), dp, kCols);
      if (pt.values)
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t c = 0; c < cols; ++c) {
            const T* vr = pt.values + pt.value_row(i0 + r, j0 + c, g.dv);
            T sum = 0;
            for (std::int64_t e = 0; e < g.dv; ++e) sum += do_tile[r * g.dv + e] * vr[e];
            dp[r * kCols + c] += sum;
          }
      // dS = P (dP Z - D) into dp, P Z (the weight dV sums) into s.
      for (std::int64_t r = 0; r < rows; ++r) {
        const T delta = w.delta[static_cast<std::size_t>(i0 + r)];
        T* pr = s + r * kCols;
        T* dr = dp + r * kCols;
        if (o.dropout > 0.0) {
          for (std::int64_t c = 0; c < cols; ++c) {
            const T z = drop_factor(stream, pr[c], keep_scale, index_of(h.bh, i0 + r, j0 + c, g), cache);
            dr[c] = pr[c] * (dr[c] * z - delta);
            pr[c] *= z;
          }
        } else {
          for (std::int64_t c = 0; c < cols; ++c) dr[c] = pr[c] * (dr[c] - delta);
        }
      }
      cpu::gemm(true, false, cols, g.dv, rows, T(1), s, kCols, do_tile, g.dv, T(1), d.dv + j0 * g.dv, g.dv);
      if (pt.d_values)
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t c = 0; c < cols; ++c) {
            const T pz = s[r * kCols + c];
            if (pz == T(0)) continue;
            T* dvr = pt.d_values + pt.value_row(i0 + r, j0 + c, g.dv);
            for (std::int64_t e = 0; e < g.dv; ++e) dvr[e] += pz * do_tile[r * g.dv + e];
          }
      ex.backward(raw, dp, d.expr_shares, h.bh, i0, rows, j0, cols, cls);
      if (pt.d_scores)
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t c = 0; c < cols; ++c) pt.d_scores[pt.score_slot(i0 + r, j0 + c)] += dp[r * kCols + c];
      cpu::gemm(false, false, rows, g.dk, cols, scale, dp, kCols, h.k + j0 * g.dk, g.dk, T(1), d.dq + i0 * g.dk, g.dk);
      cpu::gemm(true, false, cols, g.dk, rows, scale, dp, kCols, q_tile, g.dk, T(1), d.dk + j0 * g.dk, g.dk);
    });
  }
}

}  // namespace

void flash_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, const Tensor& mask, const Tensor& lengths, const FlashOptions& options,
                        FlashGrads& grads) {
  for_float(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Geometry g = geometry(q, k, v);
    const Inputs<T> in{q.data<T>(), k.data<T>(), v.data<T>(), mask.defined() ? mask.data<T>() : nullptr,
                       lengths.defined() ? lengths.data<std::int32_t>() : nullptr};
    const TermInputs<T> terms(options, g);
    const Expressions<T> ex(options, g);
    const std::int64_t heads = g.batch * g.heads;
    // Each (batch, head) task sums its share of the bucket values' and the expressions' tensors'
    // gradients; the shares are added after, so that no two tasks write one element.
    const std::int64_t value_block = terms.values ? terms::bucket_count(terms.value_clip) * g.dv : 0;
    std::vector<T> value_shares(static_cast<std::size_t>(heads * value_block));
    std::vector<double> expr_shares(static_cast<std::size_t>(heads * ex.shares_size()), 0.0);
    T* d_scores = grads.d_bucket_scores.defined() ? grads.d_bucket_scores.data<T>() : nullptr;
    parallel_for(heads, 1, [&](std::int64_t s, std::int64_t e) {
      BackwardScratch<T> scratch;
      for (std::int64_t bh = s; bh < e; ++bh) {
        T* share = value_block ? value_shares.data() + bh * value_block : nullptr;
        const HeadGrads<T> d{out.data<T>() + bh * g.tq * g.dv, lse.data<T>() + bh * g.tq,
                             dout.data<T>() + bh * g.tq * g.dv, grads.dq.data<T>() + bh * g.tq * g.dk,
                             grads.dk.data<T>() + bh * g.tk * g.dk, grads.dv.data<T>() + bh * g.tk * g.dv,
                             ex.shares_size() ? expr_shares.data() + bh * ex.shares_size() : nullptr};
        backward_head(in.head(g, bh), terms.of(bh, g, d_scores, share), ex, g, options, d, scratch);
      }
    });
    if (grads.d_bucket_values.defined()) {
      T* dst = grads.d_bucket_values.data<T>();
      std::fill(dst, dst + value_block, T(0));
      for (std::int64_t bh = 0; bh < heads; ++bh)
        for (std::int64_t n = 0; n < value_block; ++n) dst[n] += value_shares[static_cast<std::size_t>(bh * value_block + n)];
    }
    if (ex.any()) ex.write_gradients(expr_shares, heads, grads.d_expr_tensors);
  });
}

}  // namespace attnlab::flash::detail
