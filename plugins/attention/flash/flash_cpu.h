#pragma once
// The CPU path of flash_attention, shared by its forward (flash_cpu_forward.cpp) and backward
// (flash_cpu_backward.cpp): the tiled algorithm of the CUDA kernels, with the products of a tile
// as BLAS calls on the calling thread (attnlab/cpu_kernels.h) and the per-score work as
// vectorized row loops. A tile is kRows queries by kCols keys of one (batch, head) pair:
//   S = scale q k^T (one GEMM, k transposed once per head) + position terms
//   S = score expressions (the compiled tile kernels, attnlab/expr/score_kernels.h)
//   S + key padding mask, -inf past each query's last visible key (key length, causal diagonal)
// Key tiles past the last key the tile's last query sees are never visited, and those mask_mod
// removes whole are skipped; mask_mod is evaluated only on tiles its positions leave mixed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "attnlab/cpu_kernels.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/expr/score_kernels.h"
#include "attnlab/plugin/kernel_term_math.h"
#include "attnlab/threads.h"
#include "flash_attention_kernels.h"
#include "flash_dropout.h"

namespace attnlab::flash::detail::cpu_path {

// Queries and keys of a tile.
inline constexpr std::int64_t kRows = 32;
inline constexpr std::int64_t kCols = 64;

// One tile's worth of values (kRows x kCols, row-major): the scores and what the passes derive
// from them.
template <typename T>
std::vector<T> tile_buffer() {
  return std::vector<T>(static_cast<std::size_t>(kRows * kCols));
}

struct Geometry {
  std::int64_t batch, heads, tq, tk, dk, dv;
};
Geometry geometry(const Tensor& q, const Tensor& k, const Tensor& v);

// Query i sees keys [0, visible_end): the real keys, and under causal masking those j <= i + Tk - Tq.
std::int64_t visible_end(std::int64_t i, std::int64_t length, const Geometry& g, bool causal);

// One (batch, head) pair's rows of the inputs and what bounds its keys.
template <typename T>
struct Head {
  std::int64_t bh, b, h;
  const T* q;     // [Tq, dk]
  const T* k;     // [Tk, dk]
  const T* v;     // [Tk, dv]
  const T* mask;  // the batch row's [Tk] additive mask, or null
  std::int64_t length;  // keys [0, length) are real
};

template <typename T>
struct Inputs {
  const T* q;
  const T* k;
  const T* v;
  const T* mask;                // [B, Tk] or null
  const std::int32_t* lengths;  // [B] or null
  Head<T> head(const Geometry& g, std::int64_t bh) const;
};

// One head's position terms in kernel form (kernel_terms.h), queries at q_offset + i. The gradient
// pointers are null in the forward.
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

  bool any_score() const { return distance || scores; }
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

// The options' position terms as pointers of T, and each head's view of them.
template <typename T>
struct TermInputs {
  std::int64_t q_offset = 0;
  std::vector<T> slopes;      // [H], empty without a distance bias
  const T* scores = nullptr;  // [B, H, Tq, 2 clip + 1]
  std::int64_t score_clip = 0;
  const T* values = nullptr;  // [2 clip + 1, dv]
  std::int64_t value_clip = 0;

  TermInputs(const FlashOptions& o, const Geometry& g);
  // Head bh's terms, writing the gradients to d_scores (the whole tensor) and d_values (the head's
  // own share) when they are not null.
  PositionTerms<T> of(std::int64_t bh, const Geometry& g, T* d_scores, T* d_values) const;
};

// A call's score expressions on the CPU: the compiled tile kernels for T, the tensors' data in T,
// each batch row's lengths. Without expressions every tile is kept and nothing is applied.
template <typename T>
class Expressions {
 public:
  Expressions(const FlashOptions& o, const Geometry& g);
  bool any() const { return call_ != nullptr; }
  // The keys of [j0, j1) that queries [i0, i1) of head bh may keep, and what mask_mod does over them:
  // the tile's class, narrowed on a mixed tile to the strips of kStrip keys not removed whole (a
  // sink's tile computes its first strip alone). begin == end: nothing to compute.
  struct KeySpan {
    expr::TileMask cls;
    std::int64_t begin, end;
  };
  KeySpan span(std::int64_t bh, std::int64_t i0, std::int64_t j0, std::int64_t j1) const;
  static constexpr std::int64_t kStrip = 16;
  // The tile's scores s [rows, kCols] -> score_mod's, -inf where a mixed tile's mask_mod removes them.
  void forward(T* s, std::int64_t bh, std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
               expr::TileMask cls) const;
  // ds [rows, kCols] (d loss / d score_mod's result) -> d loss / d raw score, from the raw scores
  // `raw`; the learned tensors' gradients added to `shares` (one f64 block per learned tensor,
  // shares_size() in all; null: none).
  void backward(const T* raw, T* ds, double* shares, std::int64_t bh, std::int64_t i0, std::int64_t rows,
                std::int64_t j0, std::int64_t cols, expr::TileMask cls) const;
  std::int64_t shares_size() const { return shares_size_; }
  // Adds a task's shares (in task order, by the caller) into the gradients of the learned tensors.
  void write_gradients(const std::vector<double>& shares, std::int64_t tasks, std::vector<Tensor>& grads) const;

 private:
  attnlab_expr_tile tile(T* s, std::int64_t bh, std::int64_t i0, std::int64_t rows, std::int64_t j0,
                         std::int64_t cols, expr::TileMask cls) const;
  // The span of every (query tile, key tile) of the heads mask_mod does not tell apart from bh, keys
  // relative to the tile's first.
  const std::vector<KeySpan>& tile_map(std::int64_t bh) const;
  const expr::ScoreExprCall* call_ = nullptr;
  std::int64_t heads_ = 1, tq_ = 0, tk_ = 0;
  expr::MaskReads reads_;
  mutable std::mutex maps_mutex_;
  mutable std::map<std::pair<std::int64_t, std::int64_t>, std::vector<KeySpan>> maps_;
  expr::TileFn forward_ = nullptr, backward_ = nullptr;
  std::vector<Tensor> host_;
  std::vector<const void*> data_;
  std::vector<std::int64_t> q_len_, kv_len_;
  std::vector<std::int64_t> share_offset_;  // per tensor: its block in a task's shares, -1 when not learned
  std::int64_t shares_size_ = 0;
};

// The score tile of queries [i0, i0 + rows) and keys [j0, j0 + cols) into s [rows, kCols]: scale q k^T
// (kt: the head's keys transposed, [dk, Tk]) plus the position terms, copied to `raw` (when not
// null) before the expressions apply, then the mask and the visibility of each query.
template <typename T>
void score_tile(const Head<T>& h, const T* kt, const PositionTerms<T>& pt, const Expressions<T>& ex,
                const Geometry& g, const FlashOptions& o, std::int64_t i0, std::int64_t rows, std::int64_t j0,
                std::int64_t cols, expr::TileMask cls, T* s, T* raw);

// The head's keys (or values) [T, d] transposed to [d, T].
template <typename T>
void transpose(const T* x, std::int64_t t, std::int64_t d, T* out);

// The Philox index of weight (bh, i, j) (flash_dropout.h).
inline std::uint64_t index_of(std::int64_t bh, std::int64_t i, std::int64_t j, const Geometry& g) {
  return weight_index(static_cast<std::uint64_t>(bh), static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j),
                      static_cast<std::uint64_t>(g.tq), static_cast<std::uint64_t>(g.tk));
}

// Calls fn(T{}) with T the element type of `dtype` (f32 or f64); an Error for another.
template <typename Fn>
void for_float(DType dtype, Fn&& fn) {
  if (dtype == DType::f64) fn(double{});
  else if (dtype == DType::f32) fn(float{});
  else throw Error(fmt::format("attention flash: dtype {} is not supported on cpu (f32, f64)", dtype_name(dtype)));
}

// Row functions in T: the vectorized ones of the core for float, plain loops for double.
float row_max(const float* x, std::int64_t n);
double row_max(const double* x, std::int64_t n);
// x[k] = exp(x[k] - shift); returns their sum.
double exp_row(float* x, float shift, std::int64_t n);
double exp_row(double* x, double shift, std::int64_t n);

// The key tiles that queries [i0, i0 + rows) of head h see, in order: tiles of kCols keys up to
// the last key the tile's last query sees, each narrowed to the keys mask_mod leaves it (a tile it
// removes whole is skipped); fn(j0, cols, cls) for each, the forward's and the backward's loop.
template <typename T, typename Fn>
void for_each_key_tile(const Head<T>& h, const Expressions<T>& ex, const Geometry& g, bool causal, std::int64_t i0,
                       std::int64_t rows, Fn&& fn) {
  const std::int64_t key_end = visible_end(i0 + rows - 1, h.length, g, causal);
  for (std::int64_t tile0 = 0; tile0 < key_end; tile0 += kCols) {
    const auto span = ex.span(h.bh, i0, tile0, std::min(tile0 + kCols, key_end));
    if (span.begin < span.end) fn(span.begin, span.end - span.begin, span.cls);
  }
}

}  // namespace attnlab::flash::detail::cpu_path
