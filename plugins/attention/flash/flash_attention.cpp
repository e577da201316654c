// flash_attention: checks, key lengths, dispatch, and the autograd Node whose backward recomputes
// the attention weights tile by tile (flash_attention_kernels.h).
#include "flash_attention.h"

#include <algorithm>
#include <cmath>

#include "attnlab/autograd.h"
#include "attnlab/expr/score_kernels.h"
#include "attnlab/dispatch.h"
#include "attnlab/ops/cast.h"
#include "flash_attention_kernels.h"

namespace attnlab::flash {
namespace {

using detail::flash_backward_cpu;
using detail::flash_forward_cpu;
using detail::flash_key_lengths_cpu;
using detail::flash_backward_cuda;
using detail::flash_forward_cuda;
using detail::flash_key_lengths_cuda;

// Saves what the backward recomputes the weights from: q, k, v, the output and the per-row
// logsumexp (not the [Tq, Tk] weights), with the mask, the key lengths and the options (whose
// bucket scores and values are inputs 3 and 4, undefined when absent, and the expressions'
// tensors inputs 5 on).
class FlashAttentionNode final : public Node {
 public:
  FlashAttentionNode(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, Tensor lse, Tensor mask,
                     Tensor lengths, const FlashOptions& options)
      : q_(q.detach()), k_(k.detach()), v_(v.detach()), out_(out.detach()), lse_(std::move(lse)),
        mask_(std::move(mask)), lengths_(std::move(lengths)), options_(options) {
    options_.key_padding_mask = Tensor();
    options_.key_lengths = Tensor();
    Tensor& scores = options_.score_terms.bucket_scores;
    Tensor& values = options_.value_terms.bucket_values;
    if (scores.defined()) scores = scores.detach();
    if (values.defined()) values = values.detach();
    if (options_.expressions) {
      // The tensors detached, with a mark for those whose gradient is wanted.
      auto call = std::make_shared<expr::ScoreExprCall>(*options_.expressions);
      for (Tensor& t : call->tensors) {
        const bool wanted = t.requires_grad();
        t = t.detach();
        if (wanted) t.set_requires_grad(true);
      }
      options_.expressions = call;
    }
  }

  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor dout = grads.empty() || !grads[0].defined() ? Tensor::zeros(out_.shape(), out_.dtype(), out_.device())
                                                              : grads[0];
    detail::FlashGrads g{Tensor::empty_like(q_), Tensor::empty_like(k_), Tensor::empty_like(v_), {}, {}, {}};
    const Tensor& scores = options_.score_terms.bucket_scores;
    const Tensor& values = options_.value_terms.bucket_values;
    if (scores.defined()) g.d_bucket_scores = Tensor::empty_like(scores);
    if (values.defined()) g.d_bucket_values = Tensor::empty_like(values);
    ATTNLAB_DISPATCH(q_.device(), flash_backward, q_, k_, v_, out_, lse_, dout, mask_, lengths_, options_, g);
    std::vector<Tensor> out = {g.dq, g.dk, g.dv, g.d_bucket_scores, g.d_bucket_values};
    if (options_.expressions) {
      g.d_expr_tensors.resize(options_.expressions->tensors.size());
      out.insert(out.end(), g.d_expr_tensors.begin(), g.d_expr_tensors.end());
    }
    return out;
  }
  void release() override {
    q_ = k_ = v_ = out_ = lse_ = mask_ = lengths_ = Tensor();
    options_.score_terms = {};
    options_.value_terms = {};
    options_.expressions = nullptr;
  }
  std::string_view name() const override { return "flash_attention"; }

 private:
  Tensor q_, k_, v_, out_, lse_, mask_, lengths_;
  FlashOptions options_;
};

void check_same_place(const Tensor& x, const Tensor& q, const char* what) {
  ATTNLAB_CHECK(x.device() == q.device() && x.dtype() == q.dtype(),
                "attention flash: {} is {} but q is {}; they must share dtype and device", what, x.str(), q.str());
}

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const FlashOptions& o) {
  ATTNLAB_CHECK(q.defined() && k.defined() && v.defined(), "attention flash: q, k and v must be defined");
  ATTNLAB_CHECK(q.rank() == 4 && k.rank() == 4 && v.rank() == 4,
                "attention flash: q, k, v must be [batch, heads, length, head size], got {}, {}, {}", q.shape().str(),
                k.shape().str(), v.shape().str());
  check_same_place(k, q, "k");
  check_same_place(v, q, "v");
  ATTNLAB_CHECK(k.dim(0) == q.dim(0) && v.dim(0) == q.dim(0) && k.dim(1) == q.dim(1) && v.dim(1) == q.dim(1) &&
                    k.dim(2) == v.dim(2) && k.dim(3) == q.dim(3),
                "attention flash: q {}, k {}, v {} disagree: expected q [B, H, Tq, d_k], k [B, H, Tk, d_k], "
                "v [B, H, Tk, d_v]",
                q.shape().str(), k.shape().str(), v.shape().str());
  ATTNLAB_CHECK(std::isfinite(o.scale), "attention flash: scale must be finite, got {}", o.scale);
  ATTNLAB_CHECK(std::isfinite(o.dropout) && o.dropout >= 0.0 && o.dropout < 1.0,
                "attention flash: dropout must be in [0, 1), got {}", o.dropout);
  const Tensor& m = o.key_padding_mask;
  if (m.defined()) {
    check_same_place(m, q, "key_padding_mask");
    ATTNLAB_CHECK(m.shape() == Shape({q.dim(0), k.dim(2)}),
                  "attention flash: key_padding_mask {} should be [{}, {}] (batch, keys)", m.shape().str(), q.dim(0),
                  k.dim(2));
  }
  const Tensor& len = o.key_lengths;
  if (len.defined()) {
    ATTNLAB_CHECK(len.device() == q.device() && (len.dtype() == DType::i32 || len.dtype() == DType::i64) &&
                      len.shape() == Shape({q.dim(0)}),
                  "attention flash: key_lengths must be i32 or i64 [{}] on {}, got {}", q.dim(0), q.device().str(),
                  len.str());
  }
  if (o.expressions) {
    expr::check_call("attention flash", *o.expressions, q.dim(0), q.dim(1), q.dim(2), k.dim(2));
    for (const Tensor& t : o.expressions->tensors)
      ATTNLAB_CHECK(t.device() == q.device() && t.dtype() == q.dtype(),
                    "attention flash: an expression tensor is {} but q is {}; they must share dtype and device",
                    t.str(), q.str());
  }
  if (o.score_terms.any() || o.value_terms.any()) {
    ATTNLAB_CHECK(q.dim(2) <= k.dim(2), "attention flash: with position terms, the {} queries cannot outnumber the "
                  "{} keys", q.dim(2), k.dim(2));
    check_kernel_terms("attention flash", o.score_terms, o.value_terms, q, v.dim(3));
    const Tensor& values = o.value_terms.bucket_values;
    ATTNLAB_CHECK(!values.defined() || values.dtype() == q.dtype(),
                  "attention flash: the bucket values are {} but q is {}; they must share the dtype",
                  dtype_name(values.dtype()), dtype_name(q.dtype()));
  }
  if (q.device().is_cuda()) {
    ATTNLAB_CHECK(q.dtype() == DType::f32 || q.dtype() == DType::bf16,
                  "attention flash: dtype {} is not supported on cuda (f32, bf16); use the fallback key, "
                  "e.g. fallback = \"scaled_dot\" in [model.attention]",
                  dtype_name(q.dtype()));
    const std::string problem = cuda_head_dims_problem(k.dim(3), v.dim(3));
    ATTNLAB_CHECK(problem.empty(), "{}", problem);
  } else {
    ATTNLAB_CHECK(q.dtype() == DType::f32 || q.dtype() == DType::f64,
                  "attention flash: dtype {} is not supported on cpu (f32, f64)", dtype_name(q.dtype()));
  }
}

// The key lengths as i32 [B] on q's device: given, derived from the mask, or undefined (no padding).
Tensor key_lengths(const Tensor& q, const FlashOptions& o) {
  if (o.key_lengths.defined()) return o.key_lengths.to(DType::i32);
  if (!o.key_padding_mask.defined()) return {};
  Tensor lengths = Tensor::empty(Shape{q.dim(0)}, DType::i32, q.device());
  ATTNLAB_DISPATCH(q.device(), flash_key_lengths, o.key_padding_mask, lengths);
  return lengths;
}

}  // namespace

std::string cuda_head_dims_problem(std::int64_t d_k, std::int64_t d_v) {
  auto supported = [](std::int64_t d) {
    return std::find(kCudaHeadDims.begin(), kCudaHeadDims.end(), d) != kCudaHeadDims.end();
  };
  std::vector<std::string> bad;
  if (!supported(d_k)) bad.push_back(fmt::format("d_k = {}", d_k));
  if (!supported(d_v)) bad.push_back(fmt::format("d_v = {}", d_v));
  if (bad.empty()) return {};
  return fmt::format("attention flash: head size {} is not supported on cuda (supported head sizes: {}); set "
                     "fallback = \"scaled_dot\" in [model.attention] to run such models with scaled_dot",
                     fmt::join(bad, " and "), fmt::join(kCudaHeadDims, ", "));
}

FlashForward flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const FlashOptions& options) {
  check_inputs(q, k, v, options);
  const Tensor lengths = key_lengths(q, options);
  const DType lse_dtype = q.dtype() == DType::f64 ? DType::f64 : DType::f32;
  FlashForward r{Tensor::empty(Shape{q.dim(0), q.dim(1), q.dim(2), v.dim(3)}, q.dtype(), q.device()),
                 Tensor::empty(Shape{q.dim(0), q.dim(1), q.dim(2)}, lse_dtype, q.device())};
  ATTNLAB_DISPATCH(q.device(), flash_forward, q, k, v, options.key_padding_mask, lengths, options, r.out, r.logsumexp);
  // An undefined bucket tensor is an input without an edge.
  const Tensor& scores = options.score_terms.bucket_scores;
  const Tensor& values = options.value_terms.bucket_values;
  std::vector<const Tensor*> inputs = {&q, &k, &v, &scores, &values};
  if (options.expressions)
    for (const Tensor& t : options.expressions->tensors) inputs.push_back(&t);
  bool wanted = false;
  for (const Tensor* t : inputs) wanted = wanted || (t->defined() && t->requires_grad());
  if (wanted && grad_enabled())
    record(std::make_shared<FlashAttentionNode>(q, k, v, r.out, r.logsumexp, options.key_padding_mask, lengths, options),
           inputs, {&r.out});
  return r;
}

Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const FlashOptions& options) {
  return flash_attention_forward(q, k, v, options).out;
}

ExpressionKernels compile_expression_kernels(const expr::ScoreExpr& e, DType element, std::int64_t dk, std::int64_t dv,
                                             const std::string& arch) {
  ATTNLAB_CUDA_ONLY("score expressions' CUDA kernels",
                    return detail::compile_expression_kernels_cuda(
                        expr::cuda_expressions_source(e, "SiteExpressions"), element, dk, dv, arch));
}

DType flash_compute_dtype(Device device, DType dtype, Precision precision) {
  return device.is_cuda() && dtype == DType::f32 && precision == Precision::bf16 ? DType::bf16 : dtype;
}

Tensor flash_attention_in_precision(const Tensor& q, const Tensor& k, const Tensor& v, const FlashOptions& options) {
  ATTNLAB_CHECK(q.defined(), "attention flash: q must be defined");
  const DType dtype = flash_compute_dtype(q.device(), q.dtype(), compute_precision());
  if (dtype == q.dtype()) return flash_attention(q, k, v, options);
  // Checked here so that a k or v of another dtype is named as such, not after a cast.
  ATTNLAB_CHECK(k.defined() && v.defined(), "attention flash: q, k and v must be defined");
  check_same_place(k, q, "k");
  check_same_place(v, q, "v");
  FlashOptions o = options;
  if (o.key_padding_mask.defined()) {
    check_same_place(o.key_padding_mask, q, "key_padding_mask");
    o.key_padding_mask = o.key_padding_mask.to(dtype);
  }
  // The position terms' buckets and the expressions' tensors enter the kernels in their dtype
  // (differentiably, as q, k, v).
  Tensor& scores = o.score_terms.bucket_scores;
  Tensor& values = o.value_terms.bucket_values;
  if (scores.defined() && scores.dtype() != dtype) scores = cast(scores, dtype);
  if (values.defined() && values.dtype() != dtype) values = cast(values, dtype);
  if (o.expressions) {
    auto call = std::make_shared<expr::ScoreExprCall>(*o.expressions);
    for (Tensor& t : call->tensors)
      if (t.dtype() != dtype) t = cast(t, dtype);
    o.expressions = call;
  }
  return cast(flash_attention(cast(q, dtype), cast(k, dtype), cast(v, dtype), o), q.dtype());
}

}  // namespace attnlab::flash
