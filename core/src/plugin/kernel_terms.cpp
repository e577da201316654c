#include "attnlab/plugin/kernel_terms.h"

#include <vector>

#include "attnlab/ops.h"
#include "attnlab/plugin/kernel_term_math.h"

namespace attnlab {
namespace {

// [rows, keys] i64 ids: row * buckets + the distance bucket of key j from query position
// q_offset + i, for the gathers below (row = i when every query shares the table).
Tensor bucket_ids(std::int64_t tq, std::int64_t keys, std::int64_t q_offset, std::int64_t clip, bool per_query,
                  Device device) {
  const std::int64_t n = terms::bucket_count(clip);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(tq * keys));
  for (std::int64_t i = 0; i < tq; ++i)
    for (std::int64_t j = 0; j < keys; ++j)
      ids[static_cast<std::size_t>(i * keys + j)] =
          (per_query ? i * n : 0) + terms::distance_bucket(q_offset + i, j, clip);
  return Tensor::from_vector<std::int64_t>({tq, keys}, ids).to(device);
}

Tensor in_dtype(const Tensor& x, DType dtype) { return x.dtype() == dtype ? x : cast(x, dtype); }

}  // namespace

void check_kernel_terms(std::string_view who, const KernelScoreTerms& s, const KernelValueTerms& v, const Tensor& q,
                        std::int64_t d_v) {
  ATTNLAB_CHECK(q.defined() && q.rank() == 4, "{}: position terms need queries [batch, heads, length, d_k], got {}",
                who, q.defined() ? q.shape().str() : std::string("none"));
  const std::int64_t b = q.dim(0), h = q.dim(1), tq = q.dim(2);
  if (s.slopes.defined())
    ATTNLAB_CHECK(s.slopes.shape() == Shape({h}) && dtype_is_floating(s.slopes.dtype()),
                  "{}: the distance bias's slopes must be [{}] (one per head), floating; got {}", who, h,
                  s.slopes.str());
  if (s.bucket_scores.defined()) {
    ATTNLAB_CHECK(s.clip >= 0, "{}: the bucket scores' clip must be >= 0, got {}", who, s.clip);
    const Shape want{b, h, tq, terms::bucket_count(s.clip)};
    ATTNLAB_CHECK(s.bucket_scores.shape() == want && s.bucket_scores.dtype() == q.dtype() &&
                      s.bucket_scores.device() == q.device(),
                  "{}: the bucket scores must be {} ([batch, heads, queries, 2 clip + 1] for clip {}) like q {}; got {}",
                  who, want.str(), s.clip, q.str(), s.bucket_scores.str());
  }
  if (v.bucket_values.defined()) {
    ATTNLAB_CHECK(v.clip >= 0, "{}: the bucket values' clip must be >= 0, got {}", who, v.clip);
    const Shape want{terms::bucket_count(v.clip), d_v};
    ATTNLAB_CHECK(v.bucket_values.shape() == want && dtype_is_floating(v.bucket_values.dtype()) &&
                      v.bucket_values.device() == q.device(),
                  "{}: the bucket values must be {} ([2 clip + 1, d_v] for clip {}), floating, on {}; got {}", who,
                  want.str(), v.clip, q.device().str(), v.bucket_values.str());
  }
}

Tensor expand_score_terms(const KernelScoreTerms& t, const Tensor& q, std::int64_t q_offset, std::int64_t keys) {
  if (!t.any()) return {};
  check_kernel_terms("position score terms", t, {}, q, 0);
  const std::int64_t b = q.dim(0), h = q.dim(1), tq = q.dim(2);
  Tensor out;
  if (t.bucket_scores.defined()) {
    // Row (i, r) of [Tq * buckets, B h] holds every batch row's and head's score of bucket r for
    // query i; gathering rows i * buckets + r_ij gives [Tq, keys, B h].
    const std::int64_t n = terms::bucket_count(t.clip);
    Tensor table = permute(t.bucket_scores, {2, 3, 0, 1}).reshape({tq * n, b * h});
    Tensor g = embedding(table, bucket_ids(tq, keys, q_offset, t.clip, true, q.device()));  // [Tq, keys, B h]
    out = permute(g.reshape({tq, keys, b, h}), {2, 3, 0, 1});                               // [B, h, Tq, keys]
  }
  if (t.slopes.defined()) {
    const std::vector<double> m = t.slopes.to(Device::cpu()).to(DType::f64).to_vector<double>();
    std::vector<double> bias(static_cast<std::size_t>(h * tq * keys));
    for (std::int64_t n = 0; n < h; ++n)
      for (std::int64_t i = 0; i < tq; ++i)
        for (std::int64_t j = 0; j < keys; ++j)
          bias[static_cast<std::size_t>((n * tq + i) * keys + j)] =
              terms::distance_bias(m[static_cast<std::size_t>(n)], q_offset + i, j);
    Tensor d = Tensor::from_vector<double>({1, h, tq, keys}, bias).to(q.dtype()).to(q.device());
    out = out.defined() ? add(out, d) : d;
  }
  return out;
}

Tensor expand_value_terms(const KernelValueTerms& t, const Tensor& weights, std::int64_t q_offset) {
  if (!t.any()) return {};
  ATTNLAB_CHECK(weights.defined() && weights.rank() == 4,
                "position value terms: the weights must be [batch, heads, queries, keys], got {}",
                weights.defined() ? weights.shape().str() : std::string("none"));
  const std::int64_t b = weights.dim(0), h = weights.dim(1), tq = weights.dim(2), tk = weights.dim(3);
  const std::int64_t d_v = t.bucket_values.dim(-1);
  ATTNLAB_CHECK(t.clip >= 0 && t.bucket_values.shape() == Shape({terms::bucket_count(t.clip), d_v}),
                "position value terms: the bucket values must be [2 clip + 1, d_v] for clip {}, got {}", t.clip,
                t.bucket_values.shape().str());
  // sum_j w_ij V[r_ij] as one batched product per query: [Tq, B h, Tk] x [Tq, Tk, d_v].
  Tensor a = embedding(in_dtype(t.bucket_values, weights.dtype()),
                       bucket_ids(tq, tk, q_offset, t.clip, false, weights.device()));  // [Tq, Tk, d_v]
  Tensor per_query = permute(weights, {2, 0, 1, 3}).reshape({tq, b * h, tk});           // [Tq, B h, Tk]
  Tensor z = matmul(per_query, a).reshape({tq, b, h, d_v});                               // [Tq, B, h, d_v]
  return permute(z, {1, 2, 0, 3});
}

}  // namespace attnlab
