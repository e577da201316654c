// CPU path of flash_attention: the tiled online-softmax algorithm of the CUDA kernels, computed
// in T (f32 or f64), one (batch, head) pair per task on the core's threads. Query tiles of
// kTileQueries rows walk key tiles of kTileKeys keys; a key tile past the last key that the
// tile's last query may see (its key length, the causal diagonal) is never visited. Position
// terms in kernel form are computed per score from the positions (PositionTerms below).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/plugin/kernel_term_math.h"
#include "attnlab/threads.h"
#include "flash_attention_kernels.h"
#include "flash_dropout.h"

namespace attnlab::flash::detail {
namespace {

struct Geometry {
  std::int64_t heads, tq, tk, dk, dv;
};

template <typename T>
struct Inputs {
  const T* q;                    // [B, H, Tq, dk]
  const T* k;                    // [B, H, Tk, dk]
  const T* v;                    // [B, H, Tk, dv]
  const T* mask;                 // [B, Tk] or null
  const std::int32_t* lengths;   // [B] or null
};

// One head's view: the rows of (b, h) and what bounds its keys.
template <typename T>
struct Head {
  std::int64_t bh;
  const T* q;
  const T* k;
  const T* v;
  const T* mask;          // the batch row's [Tk] mask, or null
  std::int64_t length;    // keys [0, length) are real
};

template <typename T>
Head<T> head(const Inputs<T>& in, const Geometry& g, std::int64_t bh) {
  const std::int64_t b = bh / g.heads;
  const std::int64_t length = in.lengths ? std::clamp<std::int64_t>(in.lengths[b], 0, g.tk) : g.tk;
  return {bh, in.q + bh * g.tq * g.dk, in.k + bh * g.tk * g.dk, in.v + bh * g.tk * g.dv,
          in.mask ? in.mask + b * g.tk : nullptr, length};
}

// Query i may see keys [0, visible_end): the real keys, and under causal masking those j <= i + Tk - Tq.
std::int64_t visible_end(std::int64_t i, std::int64_t length, const Geometry& g, bool causal) {
  if (!causal) return length;
  return std::min(length, std::clamp<std::int64_t>(i + (g.tk - g.tq) + 1, 0, g.tk));
}

// One head's position terms in kernel form (kernel_terms.h), queries at q_offset + i. The
// gradient pointers are null in the forward.
template <typename T>
struct PositionTerms {
  std::int64_t q_offset = 0;
  bool distance = false;
  T slope = 0;
  const T* scores = nullptr;  // this head's bucket scores [Tq, 2 clip + 1], or null
  T* d_scores = nullptr;      // their gradient, same layout
  std::int64_t score_clip = 0;
  const T* values = nullptr;  // bucket values [2 clip + 1, dv], or null
  T* d_values = nullptr;      // this head's share of their gradient, same layout
  std::int64_t value_clip = 0;

  // The term added to the scaled score of query i and key j.
  T score(std::int64_t i, std::int64_t j) const {
    T t = 0;
    if (distance) t += terms::distance_bias(slope, q_offset + i, j);
    if (scores) t += scores[score_slot(i, j)];
    return t;
  }
  std::int64_t score_slot(std::int64_t i, std::int64_t j) const {
    return i * terms::bucket_count(score_clip) + terms::distance_bucket(q_offset + i, j, score_clip);
  }
  // The offset of query i's value vector for key j in `values` (and `d_values`).
  std::int64_t value_row(std::int64_t i, std::int64_t j, std::int64_t dv) const {
    return terms::distance_bucket(q_offset + i, j, value_clip) * dv;
  }
};

// The Philox index of weight (bh, i, j) (flash_dropout.h).
std::uint64_t index_of(std::int64_t bh, std::int64_t i, std::int64_t j, const Geometry& g) {
  return weight_index(static_cast<std::uint64_t>(bh), static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j),
                      static_cast<std::uint64_t>(g.tq), static_cast<std::uint64_t>(g.tk));
}

template <typename T>
T dot(const T* a, const T* b, std::int64_t n) {
  T s = 0;
  for (std::int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

template <typename T>
void forward_head(const Head<T>& h, const PositionTerms<T>& pt, const Geometry& g, const FlashOptions& o, T* out,
                  T* lse) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const T scale = static_cast<T>(o.scale);
  const T keep_scale = static_cast<T>(1.0 / (1.0 - o.dropout));
  const DropoutStream stream{o.dropout, o.seed, o.offset, o.seed_slot};
  KeepCache cache;
  std::vector<T> m(kTileQueries), l(kTileQueries), acc(static_cast<std::size_t>(kTileQueries * g.dv)), s(kTileKeys);
  for (std::int64_t i0 = 0; i0 < g.tq; i0 += kTileQueries) {
    const std::int64_t i1 = std::min(i0 + kTileQueries, g.tq);
    // The tile's last query sees the most keys: no key tile past that is visited.
    const std::int64_t key_end = visible_end(i1 - 1, h.length, g, o.causal);
    std::fill(m.begin(), m.end(), kNegInf);
    std::fill(l.begin(), l.end(), T(0));
    std::fill(acc.begin(), acc.end(), T(0));
    for (std::int64_t j0 = 0; j0 < key_end; j0 += kTileKeys) {
      const std::int64_t j1 = std::min(j0 + kTileKeys, key_end);
      for (std::int64_t i = i0; i < i1; ++i) {
        const std::size_t r = static_cast<std::size_t>(i - i0);
        const std::int64_t row_end = std::min(j1, visible_end(i, h.length, g, o.causal));
        if (row_end <= j0) continue;  // the whole key tile is hidden from this query
        // Scores of the tile, and the running maximum.
        T tile_max = kNegInf;
        for (std::int64_t j = j0; j < row_end; ++j) {
          T sc = dot(h.q + i * g.dk, h.k + j * g.dk, g.dk) * scale + pt.score(i, j);
          if (h.mask) sc += h.mask[j];
          s[static_cast<std::size_t>(j - j0)] = sc;
          tile_max = std::max(tile_max, sc);
        }
        const T m_new = std::max(m[r], tile_max);
        if (m_new == kNegInf) continue;  // every key so far is masked
        // Rescale what was summed under the old maximum (alpha is 0 while nothing was).
        const T alpha = std::exp(m[r] - m_new);
        l[r] *= alpha;
        T* a = acc.data() + r * static_cast<std::size_t>(g.dv);
        for (std::int64_t d = 0; d < g.dv; ++d) a[d] *= alpha;
        for (std::int64_t j = j0; j < row_end; ++j) {
          const T e = std::exp(s[static_cast<std::size_t>(j - j0)] - m_new);
          l[r] += e;  // the softmax denominator counts dropped weights too
          const T w = e * drop_factor(stream, e, keep_scale, index_of(h.bh, i, j, g), cache);
          if (w == T(0)) continue;
          const T* vj = h.v + j * g.dv;
          for (std::int64_t d = 0; d < g.dv; ++d) a[d] += w * vj[d];
          if (pt.values) {
            const T* vr = pt.values + pt.value_row(i, j, g.dv);
            for (std::int64_t d = 0; d < g.dv; ++d) a[d] += w * vr[d];
          }
        }
        m[r] = m_new;
      }
    }
    for (std::int64_t i = i0; i < i1; ++i) {
      const std::size_t r = static_cast<std::size_t>(i - i0);
      const T* a = acc.data() + r * static_cast<std::size_t>(g.dv);
      T* oi = out + i * g.dv;
      const bool seen = l[r] > T(0);
      for (std::int64_t d = 0; d < g.dv; ++d) oi[d] = seen ? a[d] / l[r] : T(0);
      lse[i] = seen ? m[r] + std::log(l[r]) : kNegInf;
    }
  }
}

template <typename T>
void backward_head(const Head<T>& h, const PositionTerms<T>& pt, const Geometry& g, const FlashOptions& o,
                   const T* out, const T* lse, const T* dout, T* dq, T* dk, T* dv) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const T scale = static_cast<T>(o.scale);
  const T keep_scale = static_cast<T>(1.0 / (1.0 - o.dropout));
  const DropoutStream stream{o.dropout, o.seed, o.offset, o.seed_slot};
  KeepCache cache;
  std::fill(dq, dq + g.tq * g.dk, T(0));
  std::fill(dk, dk + g.tk * g.dk, T(0));
  std::fill(dv, dv + g.tk * g.dv, T(0));
  if (pt.d_scores) std::fill(pt.d_scores, pt.d_scores + g.tq * terms::bucket_count(pt.score_clip), T(0));
  if (pt.d_values) std::fill(pt.d_values, pt.d_values + terms::bucket_count(pt.value_clip) * g.dv, T(0));
  // D_i = sum_j P_ij dP_ij = dout_i . out_i (dropout included, since out holds the dropped weights).
  std::vector<T> delta(static_cast<std::size_t>(g.tq));
  for (std::int64_t i = 0; i < g.tq; ++i) delta[static_cast<std::size_t>(i)] = dot(dout + i * g.dv, out + i * g.dv, g.dv);
  for (std::int64_t i0 = 0; i0 < g.tq; i0 += kTileQueries) {
    const std::int64_t i1 = std::min(i0 + kTileQueries, g.tq);
    const std::int64_t key_end = visible_end(i1 - 1, h.length, g, o.causal);
    for (std::int64_t j0 = 0; j0 < key_end; j0 += kTileKeys) {
      const std::int64_t j1 = std::min(j0 + kTileKeys, key_end);
      for (std::int64_t i = i0; i < i1; ++i) {
        const std::int64_t row_end = std::min(j1, visible_end(i, h.length, g, o.causal));
        if (row_end <= j0 || lse[i] == kNegInf) continue;
        const T* qi = h.q + i * g.dk;
        const T* doi = dout + i * g.dv;
        T* dqi = dq + i * g.dk;
        for (std::int64_t j = j0; j < row_end; ++j) {
          T sc = dot(qi, h.k + j * g.dk, g.dk) * scale + pt.score(i, j);
          if (h.mask) sc += h.mask[j];
          const T p = std::exp(sc - lse[i]);  // the softmax weight, recomputed
          if (p == T(0)) continue;           // masked (or negligible): no gradient
          const T z = drop_factor(stream, p, keep_scale, index_of(h.bh, i, j, g), cache);  // d(dropped) / d(weight)
          const T* vj = h.v + j * g.dv;
          const T* vr = pt.values ? pt.values + pt.value_row(i, j, g.dv) : nullptr;
          const T dp = (dot(doi, vj, g.dv) + (vr ? dot(doi, vr, g.dv) : T(0))) * z;  // dL / d(weight ij)
          const T dscore = p * (dp - delta[static_cast<std::size_t>(i)]);           // dL / d(score ij)
          if (pt.d_scores) pt.d_scores[pt.score_slot(i, j)] += dscore;
          const T ds = dscore * scale;
          const T pz = p * z;
          T* dvj = dv + j * g.dv;
          if (pz != T(0)) {
            for (std::int64_t d = 0; d < g.dv; ++d) dvj[d] += pz * doi[d];
            if (pt.d_values) {
              T* dvr = pt.d_values + pt.value_row(i, j, g.dv);
              for (std::int64_t d = 0; d < g.dv; ++d) dvr[d] += pz * doi[d];
            }
          }
          const T* kj = h.k + j * g.dk;
          T* dkj = dk + j * g.dk;
          for (std::int64_t d = 0; d < g.dk; ++d) {
            dqi[d] += ds * kj[d];
            dkj[d] += ds * qi[d];
          }
        }
      }
    }
  }
}

// The options' position terms as pointers of T, and each head's view of them.
template <typename T>
struct TermInputs {
  std::int64_t q_offset = 0;
  std::vector<T> slopes;      // [H], empty without a distance bias
  const T* scores = nullptr;  // [B, H, Tq, 2 clip + 1]
  std::int64_t score_clip = 0;
  const T* values = nullptr;  // [2 clip + 1, dv]
  std::int64_t value_clip = 0;

  // Head bh's terms, writing the gradients to d_scores (the whole tensor) and d_values (the head's
  // own share) when they are not null.
  PositionTerms<T> of(std::int64_t bh, const Geometry& g, T* d_scores, T* d_values) const {
    PositionTerms<T> p;
    p.q_offset = q_offset;
    if (!slopes.empty()) {
      p.distance = true;
      p.slope = slopes[static_cast<std::size_t>(bh % g.heads)];
    }
    const std::int64_t block = g.tq * terms::bucket_count(score_clip);
    if (scores) {
      p.scores = scores + bh * block;
      p.d_scores = d_scores ? d_scores + bh * block : nullptr;
      p.score_clip = score_clip;
    }
    p.values = values;
    p.d_values = values ? d_values : nullptr;
    p.value_clip = value_clip;
    return p;
  }
};

template <typename T>
TermInputs<T> term_inputs(const FlashOptions& o, const Geometry& g) {
  TermInputs<T> t;
  t.q_offset = g.tk - g.tq;
  if (o.score_terms.slopes.defined())
    for (double m : o.score_terms.slopes.to(Device::cpu()).to(DType::f64).to_vector<double>())
      t.slopes.push_back(static_cast<T>(m));
  if (o.score_terms.bucket_scores.defined()) {
    t.scores = o.score_terms.bucket_scores.data<T>();
    t.score_clip = o.score_terms.clip;
  }
  if (o.value_terms.bucket_values.defined()) {
    t.values = o.value_terms.bucket_values.data<T>();
    t.value_clip = o.value_terms.clip;
  }
  return t;
}

Geometry geometry(const Tensor& q, const Tensor& k, const Tensor& v) {
  return {q.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)};
}

template <typename T>
Inputs<T> inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths) {
  return {q.data<T>(), k.data<T>(), v.data<T>(), mask.defined() ? mask.data<T>() : nullptr,
          lengths.defined() ? lengths.data<std::int32_t>() : nullptr};
}

template <typename Fn>
void for_float(DType dtype, Fn&& fn) {
  if (dtype == DType::f64) fn(double{});
  else if (dtype == DType::f32) fn(float{});
  else throw Error(fmt::format("attention flash: dtype {} is not supported on cpu (f32, f64)", dtype_name(dtype)));
}

}  // namespace

void flash_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
                       const FlashOptions& options, Tensor& out, Tensor& lse) {
  for_float(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Geometry g = geometry(q, k, v);
    const Inputs<T> in = inputs<T>(q, k, v, mask, lengths);
    const TermInputs<T> pos = term_inputs<T>(options, g);
    T* po = out.data<T>();
    T* pl = lse.data<T>();
    parallel_for(q.dim(0) * g.heads, 1, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t bh = s; bh < e; ++bh)
        forward_head(head(in, g, bh), pos.of(bh, g, nullptr, nullptr), g, options, po + bh * g.tq * g.dv,
                     pl + bh * g.tq);
    });
  });
}

void flash_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, const Tensor& mask, const Tensor& lengths, const FlashOptions& options,
                        FlashGrads& grads) {
  for_float(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Geometry g = geometry(q, k, v);
    const Inputs<T> in = inputs<T>(q, k, v, mask, lengths);
    const TermInputs<T> pos = term_inputs<T>(options, g);
    const std::int64_t heads = q.dim(0) * g.heads;
    // Each (batch, head) task sums its share of the bucket values' gradient; the shares are added
    // after, so that no two tasks write one element.
    const std::int64_t value_block = pos.values ? terms::bucket_count(pos.value_clip) * g.dv : 0;
    std::vector<T> value_shares(static_cast<std::size_t>(heads * value_block));
    T* d_scores = grads.d_bucket_scores.defined() ? grads.d_bucket_scores.data<T>() : nullptr;
    const T* po = out.data<T>();
    const T* pl = lse.data<T>();
    const T* pdo = dout.data<T>();
    T* pdq = grads.dq.data<T>();
    T* pdk = grads.dk.data<T>();
    T* pdv = grads.dv.data<T>();
    parallel_for(heads, 1, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t bh = s; bh < e; ++bh) {
        T* share = value_block ? value_shares.data() + bh * value_block : nullptr;
        const PositionTerms<T> pt = pos.of(bh, g, d_scores, share);
        backward_head(head(in, g, bh), pt, g, options, po + bh * g.tq * g.dv, pl + bh * g.tq, pdo + bh * g.tq * g.dv,
                      pdq + bh * g.tq * g.dk, pdk + bh * g.tk * g.dk, pdv + bh * g.tk * g.dv);
      }
    });
    if (grads.d_bucket_values.defined()) {
      T* dst = grads.d_bucket_values.data<T>();
      std::fill(dst, dst + value_block, T(0));
      for (std::int64_t bh = 0; bh < heads; ++bh)
        for (std::int64_t n = 0; n < value_block; ++n)
          dst[n] += value_shares[static_cast<std::size_t>(bh * value_block + n)];
    }
  });
}

void flash_key_lengths_cpu(const Tensor& mask, Tensor& lengths) {
  for_float(mask.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* m = mask.data<T>();
    std::int32_t* out = lengths.data<std::int32_t>();
    const std::int64_t tk = mask.dim(1);
    for (std::int64_t b = 0; b < mask.dim(0); ++b) {
      std::int64_t len = tk;
      while (len > 0 && m[b * tk + len - 1] == -std::numeric_limits<T>::infinity()) --len;
      out[b] = static_cast<std::int32_t>(len);
    }
  });
}

}  // namespace attnlab::flash::detail
