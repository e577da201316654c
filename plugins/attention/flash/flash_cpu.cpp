// The pieces of flash's CPU path that its forward and backward share (flash_cpu.h).
#include "flash_cpu.h"

#include <algorithm>
#include <cmath>

#include "attnlab/cpu_kernels.h"

namespace attnlab::flash::detail::cpu_path {

Geometry geometry(const Tensor& q, const Tensor& k, const Tensor& v) {
  return {q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)};
}

std::int64_t visible_end(std::int64_t i, std::int64_t length, const Geometry& g, bool causal) {
  if (!causal) return length;
  return std::min(length, std::clamp<std::int64_t>(i + (g.tk - g.tq) + 1, 0, g.tk));
}

template <typename T>
Head<T> Inputs<T>::head(const Geometry& g, std::int64_t bh) const {
  const std::int64_t b = bh / g.heads;
  const std::int64_t length = lengths ? std::clamp<std::int64_t>(lengths[b], 0, g.tk) : g.tk;
  return {bh, b, bh % g.heads, q + bh * g.tq * g.dk, k + bh * g.tk * g.dk, v + bh * g.tk * g.dv,
          mask ? mask + b * g.tk : nullptr, length};
}

template <typename T>
TermInputs<T>::TermInputs(const FlashOptions& o, const Geometry& g) {
  q_offset = g.tk - g.tq;
  if (o.score_terms.slopes.defined())
    for (double m : o.score_terms.slopes.to(Device::cpu()).to(DType::f64).to_vector<double>())
      slopes.push_back(static_cast<T>(m));
  if (o.score_terms.bucket_scores.defined()) {
    scores = o.score_terms.bucket_scores.data<T>();
    score_clip = o.score_terms.clip;
  }
  if (o.value_terms.bucket_values.defined()) {
    values = o.value_terms.bucket_values.data<T>();
    value_clip = o.value_terms.clip;
  }
}

template <typename T>
PositionTerms<T> TermInputs<T>::of(std::int64_t bh, const Geometry& g, T* d_scores, T* d_values) const {
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

template <typename T>
Expressions<T>::Expressions(const FlashOptions& o, const Geometry& g) : heads_(g.heads), tq_(g.tq), tk_(g.tk) {
  if (!o.expressions) return;
  call_ = o.expressions.get();
  reads_ = expr::mask_reads(*call_->expr);
  const expr::CpuKernels& k = expr::cpu_kernels(*call_->expr);
  forward_ = std::is_same_v<T, float> ? k.forward_f32 : k.forward_f64;
  backward_ = std::is_same_v<T, float> ? k.backward_f32 : k.backward_f64;
  for (const Tensor& t : call_->tensors) host_.push_back(t.detach().to(Device::cpu()).to(dtype_of_v<T>));
  for (const Tensor& t : host_) data_.push_back(t.raw_data());
  q_len_ = expr::query_lengths(*call_, g.batch, g.tq);
  kv_len_ = expr::key_lengths(*call_, g.batch, g.tk);
  for (std::size_t k2 = 0; k2 < call_->tensors.size(); ++k2) {
    const bool learned = call_->expr->tensors()[k2].learned && call_->tensors[k2].requires_grad();
    share_offset_.push_back(learned ? shares_size_ : -1);
    if (learned) shares_size_ += call_->tensors[k2].numel();
  }
}

template <typename T>
const std::vector<typename Expressions<T>::KeySpan>& Expressions<T>::tile_map(std::int64_t bh) const {
  const std::int64_t b = bh / heads_, h = bh % heads_;
  const std::pair<std::int64_t, std::int64_t> key{reads_.b || reads_.lengths ? b : 0, reads_.h ? h : 0};
  std::lock_guard lock(maps_mutex_);
  auto it = maps_.find(key);
  if (it != maps_.end()) return it->second;
  const std::int64_t nq = (tq_ + kRows - 1) / kRows, nk = (tk_ + kCols - 1) / kCols;
  const std::int64_t q_len = q_len_[static_cast<std::size_t>(b)], kv_len = kv_len_[static_cast<std::size_t>(b)];
  std::vector<KeySpan> map(static_cast<std::size_t>(nq * nk));
  for (std::int64_t a = 0; a < nq; ++a) {
    const std::int64_t q0 = call_->q_offset + a * kRows, q1 = call_->q_offset + std::min((a + 1) * kRows, tq_);
    auto classify = [&](std::int64_t j0, std::int64_t j1) {
      return expr::classify_tile(*call_->expr, {b, h, q0, q1, j0, j1, q_len, kv_len});
    };
    for (std::int64_t c = 0; c < nk; ++c) {
      const std::int64_t j0 = c * kCols, j1 = std::min(j0 + kCols, tk_);
      KeySpan sp{classify(j0, j1), 0, j1 - j0};
      if (sp.cls == expr::TileMask::removed) sp.end = 0;
      if (sp.cls == expr::TileMask::mixed) {
        // The first and last strips that are not removed whole.
        std::int64_t first = -1, last = -1;
        for (std::int64_t s0 = j0; s0 < j1; s0 += kStrip)
          if (classify(s0, std::min(s0 + kStrip, j1)) != expr::TileMask::removed) {
            if (first < 0) first = s0;
            last = std::min(s0 + kStrip, j1);
          }
        if (first < 0) sp = {expr::TileMask::removed, 0, 0};
        else sp.begin = first - j0, sp.end = last - j0;
      }
      map[static_cast<std::size_t>(a * nk + c)] = sp;
    }
  }
  return maps_.emplace(key, std::move(map)).first->second;
}

template <typename T>
typename Expressions<T>::KeySpan Expressions<T>::span(std::int64_t bh, std::int64_t i0, std::int64_t j0,
                                                      std::int64_t j1) const {
  if (!call_ || !call_->expr->has_mask_mod()) return {expr::TileMask::kept, j0, j1};
  // Tiles are cut at multiples of kRows and kCols; one cut short by the keys a query sees is
  // classified as the whole one (a range that holds it), then cut again.
  const std::int64_t nk = (tk_ + kCols - 1) / kCols;
  const KeySpan& sp = tile_map(bh)[static_cast<std::size_t>((i0 / kRows) * nk + j0 / kCols)];
  return {sp.cls, j0 + sp.begin, std::min(j1, j0 + sp.end)};
}

template <typename T>
attnlab_expr_tile Expressions<T>::tile(T* s, std::int64_t bh, std::int64_t i0, std::int64_t rows, std::int64_t j0,
                                       std::int64_t cols, expr::TileMask cls) const {
  const std::int64_t b = bh / heads_;
  attnlab_expr_tile t{};
  t.s = s;
  t.ld = kCols;
  t.rows = static_cast<int>(rows);
  t.cols = static_cast<int>(cols);
  t.b = static_cast<int>(b);
  t.h = static_cast<int>(bh % heads_);
  t.q0 = static_cast<int>(call_->q_offset + i0);
  t.k0 = static_cast<int>(j0);
  t.q_len = static_cast<int>(q_len_[static_cast<std::size_t>(b)]);
  t.kv_len = static_cast<int>(kv_len_[static_cast<std::size_t>(b)]);
  t.apply_mask = cls == expr::TileMask::mixed ? 1 : 0;
  t.tensors = data_.data();
  return t;
}

template <typename T>
void Expressions<T>::forward(T* s, std::int64_t bh, std::int64_t i0, std::int64_t rows, std::int64_t j0,
                             std::int64_t cols, expr::TileMask cls) const {
  if (!call_) return;
  const attnlab_expr_tile t = tile(s, bh, i0, rows, j0, cols, cls);
  forward_(&t);
}

template <typename T>
void Expressions<T>::backward(const T* raw, T* ds, double* shares, std::int64_t bh, std::int64_t i0,
                              std::int64_t rows, std::int64_t j0, std::int64_t cols, expr::TileMask cls) const {
  if (!call_) return;
  attnlab_expr_tile t = tile(const_cast<T*>(raw), bh, i0, rows, j0, cols, cls);
  t.g = ds;
  t.ds = ds;
  std::vector<double*> grads(share_offset_.size(), nullptr);
  for (std::size_t k = 0; k < grads.size(); ++k)
    if (shares && share_offset_[k] >= 0) grads[k] = shares + share_offset_[k];
  t.grads = shares_size_ > 0 && shares ? grads.data() : nullptr;
  backward_(&t);
}

template <typename T>
void Expressions<T>::write_gradients(const std::vector<double>& shares, std::int64_t tasks,
                                     std::vector<Tensor>& grads) const {
  grads.assign(share_offset_.size(), Tensor());
  for (std::size_t k = 0; k < share_offset_.size(); ++k) {
    if (share_offset_[k] < 0) continue;
    const Tensor& like = call_->tensors[k];
    const std::int64_t n = like.numel();
    std::vector<double> sum(static_cast<std::size_t>(n), 0.0);
    for (std::int64_t t = 0; t < tasks; ++t)
      for (std::int64_t e = 0; e < n; ++e)
        sum[static_cast<std::size_t>(e)] += shares[static_cast<std::size_t>(t * shares_size_ + share_offset_[k] + e)];
    grads[k] = Tensor::from_vector<double>(like.shape(), sum).to(like.dtype()).to(like.device());
  }
}

template <typename T>
void score_tile(const Head<T>& h, const T* kt, const PositionTerms<T>& pt, const Expressions<T>& ex,
                const Geometry& g, const FlashOptions& o, std::int64_t i0, std::int64_t rows, std::int64_t j0,
                std::int64_t cols, expr::TileMask cls, T* s, T* raw) {
  cpu::gemm(false, false, rows, cols, g.dk, static_cast<T>(o.scale), h.q + i0 * g.dk, g.dk, kt + j0, g.tk, T(0), s,
            kCols);
  if (pt.any_score())
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) s[r * kCols + c] += pt.score(i0 + r, j0 + c);
  if (raw)
    for (std::int64_t r = 0; r < rows; ++r) std::copy(s + r * kCols, s + r * kCols + cols, raw + r * kCols);
  ex.forward(s, h.bh, i0, rows, j0, cols, cls);
  if (h.mask)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) s[r * kCols + c] += h.mask[j0 + c];
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t end = visible_end(i0 + r, h.length, g, o.causal);
    if (end < j0 + cols)
      std::fill(s + r * kCols + std::max<std::int64_t>(0, end - j0), s + r * kCols + cols,
                -std::numeric_limits<T>::infinity());
  }
}

template <typename T>
void transpose(const T* x, std::int64_t t, std::int64_t d, T* out) {
  // Blocks of 32 x 32 (4 KiB of floats, in L1 both ways), each output row written in one run.
  constexpr std::int64_t kBlock = 32;
  for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const std::int64_t i1 = std::min(i0 + kBlock, t);
    for (std::int64_t j0 = 0; j0 < d; j0 += kBlock) {
      const std::int64_t j1 = std::min(j0 + kBlock, d);
      for (std::int64_t j = j0; j < j1; ++j) {
        T* o = out + j * t;
        const T* in = x + j;
        for (std::int64_t i = i0; i < i1; ++i) o[i] = in[i * d];
      }
    }
  }
}

float row_max(const float* x, std::int64_t n) { return cpu::max_row(x, n); }
double row_max(const double* x, std::int64_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t k = 0; k < n; ++k) m = m < x[k] ? x[k] : m;
  return m;
}

double exp_row(float* x, float shift, std::int64_t n) {
  cpu::exp_affine(x, shift, 1.0f, 0.0f, x, n);
  return cpu::sum_row(x, n);
}
double exp_row(double* x, double shift, std::int64_t n) {
  double sum = 0;
  for (std::int64_t k = 0; k < n; ++k) sum += (x[k] = std::exp(x[k] - shift));
  return sum;
}

template struct Inputs<float>;
template struct Inputs<double>;
template struct TermInputs<float>;
template struct TermInputs<double>;
template class Expressions<float>;
template class Expressions<double>;
template void score_tile(const Head<float>&, const float*, const PositionTerms<float>&, const Expressions<float>&,
                         const Geometry&, const FlashOptions&, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         expr::TileMask, float*, float*);
template void score_tile(const Head<double>&, const double*, const PositionTerms<double>&, const Expressions<double>&,
                         const Geometry&, const FlashOptions&, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         expr::TileMask, double*, double*);
template void transpose(const float*, std::int64_t, std::int64_t, float*);
template void transpose(const double*, std::int64_t, std::int64_t, double*);

}  // namespace attnlab::flash::detail::cpu_path
