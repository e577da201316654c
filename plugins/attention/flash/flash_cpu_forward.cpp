// The forward of flash's CPU path: one task per (batch, head, tile of kRows queries), which walks
// the key tiles its queries see with an online softmax (running maximum m, denominator l and the
// output rows in acc), the weights of a tile entering acc through one product with the values.
#include "flash_cpu.h"

namespace attnlab::flash::detail {
namespace {

using namespace cpu_path;

template <typename T>
struct ForwardScratch {
  std::vector<T> s = tile_buffer<T>();
  std::vector<T> m, l, acc;
};

// Queries [i0, i0 + rows) of head h: their outputs [rows, dv] and logsumexps.
template <typename T>
void forward_tile(const Head<T>& h, const T* kt, const PositionTerms<T>& pt, const Expressions<T>& ex,
                  const Geometry& g, const FlashOptions& o, std::int64_t i0, std::int64_t rows, ForwardScratch<T>& w,
                  T* out, T* lse) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const T keep_scale = static_cast<T>(1.0 / (1.0 - o.dropout));
  const DropoutStream stream{o.dropout, o.seed, o.offset, o.seed_slot};
  KeepCache cache;
  w.m.assign(static_cast<std::size_t>(rows), kNegInf);
  w.l.assign(static_cast<std::size_t>(rows), T(0));
  w.acc.assign(static_cast<std::size_t>(rows * g.dv), T(0));
  T* s = w.s.data();
  for_each_key_tile(h, ex, g, o.causal, i0, rows, [&](std::int64_t j0, std::int64_t cols, expr::TileMask cls) {
    score_tile(h, kt, pt, ex, g, o, i0, rows, j0, cols, cls, s, static_cast<T*>(nullptr));
    for (std::int64_t r = 0; r < rows; ++r) {
      T* row = s + r * kCols;
      const std::size_t q = static_cast<std::size_t>(r);
      const T m_new = std::max(w.m[q], row_max(row, cols));
      if (m_new == kNegInf) {  // every key so far is masked: nothing enters the sums
        std::fill(row, row + cols, T(0));
        continue;
      }
      // Rescales what was summed under the old maximum (alpha is 0 while nothing was).
      const T alpha = std::exp(w.m[q] - m_new);
      if (alpha != T(1)) {
        w.l[q] *= alpha;
        T* a = w.acc.data() + r * g.dv;
        for (std::int64_t d = 0; d < g.dv; ++d) a[d] *= alpha;
      }
      w.l[q] += static_cast<T>(exp_row(row, m_new, cols));  // the denominator counts dropped weights too
      if (o.dropout > 0.0)
        for (std::int64_t c = 0; c < cols; ++c)
          row[c] *= drop_factor(stream, row[c], keep_scale, index_of(h.bh, i0 + r, j0 + c, g), cache);
      w.m[q] = m_new;
    }
    cpu::gemm(false, false, rows, g.dv, cols, T(1), s, kCols, h.v + j0 * g.dv, g.dv, T(1), w.acc.data(), g.dv);
    if (pt.values)
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) {
          const T weight = s[r * kCols + c];
          if (weight == T(0)) continue;
          const T* vr = pt.values + pt.value_row(i0 + r, j0 + c, g.dv);
          T* a = w.acc.data() + r * g.dv;
          for (std::int64_t d = 0; d < g.dv; ++d) a[d] += weight * vr[d];
        }
  });
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::size_t q = static_cast<std::size_t>(r);
    const bool seen = w.l[q] > T(0);
    const T* a = w.acc.data() + r * g.dv;
    T* o_row = out + (i0 + r) * g.dv;
    for (std::int64_t d = 0; d < g.dv; ++d) o_row[d] = seen ? a[d] / w.l[q] : T(0);
    lse[i0 + r] = seen ? w.m[q] + std::log(w.l[q]) : kNegInf;
  }
}

}  // namespace

void flash_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
                       const FlashOptions& options, Tensor& out, Tensor& lse) {
  for_float(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Geometry g = geometry(q, k, v);
    const Inputs<T> in{q.data<T>(), k.data<T>(), v.data<T>(), mask.defined() ? mask.data<T>() : nullptr,
                       lengths.defined() ? lengths.data<std::int32_t>() : nullptr};
    const TermInputs<T> terms(options, g);
    const Expressions<T> ex(options, g);
    const std::int64_t heads = g.batch * g.heads, tiles = (g.tq + kRows - 1) / kRows;
    // Each head's keys transposed once, for the tiles' products.
    std::vector<T> kt(static_cast<std::size_t>(heads * g.dk * g.tk));
    parallel_for(heads, 1, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t bh = s; bh < e; ++bh) transpose(in.k + bh * g.tk * g.dk, g.tk, g.dk, kt.data() + bh * g.dk * g.tk);
    });
    T* po = out.data<T>();
    T* pl = lse.data<T>();
    parallel_for(heads * tiles, 1, [&](std::int64_t s, std::int64_t e) {
      ForwardScratch<T> scratch;
      for (std::int64_t task = s; task < e; ++task) {
        const std::int64_t bh = task / tiles, i0 = (task % tiles) * kRows;
        forward_tile(in.head(g, bh), kt.data() + bh * g.dk * g.tk, terms.of(bh, g, nullptr, nullptr), ex, g, options,
                     i0, std::min(kRows, g.tq - i0), scratch, po + bh * g.tq * g.dv, pl + bh * g.tq);
      }
    });
  });
}

}  // namespace attnlab::flash::detail
