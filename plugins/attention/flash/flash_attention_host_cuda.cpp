// flash_*_cuda: unpack the tensors and call the launchers of flash_forward_cuda.cu and
// flash_backward_cuda.cu (compiled only when the core has CUDA: CUDA_SOURCES in CMakeLists.txt).
#include <algorithm>

#include "attnlab/device.h"
#include "flash_attention_cuda.h"
#include "flash_attention_kernels.h"
#include "flash_kernel_choice.h"
#include "flash_kernel_report.h"

namespace attnlab::flash::detail {
namespace {

cuda::Element element_of(DType dtype) {
  if (dtype == DType::f32) return cuda::Element::f32;
  if (dtype == DType::bf16) return cuda::Element::bf16;
  throw Error(fmt::format("attention flash: dtype {} is not supported on cuda (f32, bf16)", dtype_name(dtype)));
}

void check(int status, const char* what) {
  if (status != 0)
    throw Error(fmt::format("attention flash: the CUDA {} failed: {}", what, cuda::error_string(status)));
}

// The problem of one call; `slopes` receives the f32 copy of the distance bias's slopes that
// p.slopes points to (kept alive by the caller until the kernels are queued).
cuda::Problem problem(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
                      const FlashOptions& o, Tensor& slopes) {
  cuda::Problem p;
  p.element = element_of(q.dtype());
  p.batch = q.dim(0);
  p.heads = q.dim(1);
  p.tq = q.dim(2);
  p.tk = k.dim(2);
  p.dk = q.dim(3);
  p.dv = v.dim(3);
  p.q = q.raw_data();
  p.k = k.raw_data();
  p.v = v.raw_data();
  p.mask = mask.defined() ? mask.raw_data() : nullptr;
  p.key_lengths = lengths.defined() ? lengths.data<std::int32_t>() : nullptr;
  p.causal = o.causal;
  p.scale = static_cast<float>(o.scale);
  p.dropout = o.dropout;
  p.seed = o.seed;
  p.seed_slot = o.seed_slot;
  p.offset = o.offset;
  p.device = q.device().index;
  p.stream = cuda_stream(q.device());
  // Position terms (checked by flash_attention: shapes, q's dtype for the buckets).
  if (o.score_terms.slopes.defined()) {
    slopes = o.score_terms.slopes.to(DType::f32).to(q.device());
    p.slopes = slopes.data<float>();
  }
  if (o.score_terms.bucket_scores.defined()) {
    p.bucket_scores = o.score_terms.bucket_scores.raw_data();
    p.score_clip = o.score_terms.clip;
  }
  if (o.value_terms.bucket_values.defined()) {
    p.bucket_values = o.value_terms.bucket_values.raw_data();
    p.value_clip = o.value_terms.clip;
  }
  return p;
}

}  // namespace

void flash_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
                        const FlashOptions& options, Tensor& out, Tensor& lse) {
  Tensor slopes;
  check(cuda::forward(problem(q, k, v, mask, lengths, options, slopes), out.raw_data(), lse.data<float>()), "forward");
}

void flash_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                         const Tensor& dout, const Tensor& mask, const Tensor& lengths, const FlashOptions& options,
                         FlashGrads& g) {
  Tensor delta = Tensor::empty(lse.shape(), DType::f32, q.device());
  Tensor slopes;
  const cuda::Problem p = problem(q, k, v, mask, lengths, options, slopes);
  cuda::TermGrads terms;
  Tensor shares;
  if (g.d_bucket_scores.defined()) terms.d_bucket_scores = g.d_bucket_scores.raw_data();
  if (g.d_bucket_values.defined()) {
    if (p.batch * p.heads == 0) g.d_bucket_values = Tensor::zeros_like(g.d_bucket_values);  // no pair, no gradient
    terms.d_bucket_values = g.d_bucket_values.raw_data();
    const std::int64_t floats = cuda::value_share_floats(
        p, {out.raw_data(), dout.raw_data(), g.dq.raw_data(), g.dk.raw_data(), g.dv.raw_data()});
    shares = Tensor::empty(Shape{std::max<std::int64_t>(floats, 1)}, DType::f32, q.device());
    terms.value_shares = shares.data<float>();
  }
  check(cuda::backward(p, out.raw_data(), lse.data<float>(), dout.raw_data(), delta.data<float>(), g.dq.raw_data(),
                       g.dk.raw_data(), g.dv.raw_data(), terms),
        "backward");
}

void flash_key_lengths_cuda(const Tensor& mask, Tensor& lengths) {
  check(cuda::key_lengths(element_of(mask.dtype()), mask.raw_data(), mask.dim(0), mask.dim(1),
                          lengths.data<std::int32_t>(), mask.device().index, cuda_stream(mask.device())),
        "key lengths");
}

std::string flash_kernels_cuda(int device) {
  return describe_cuda_kernels(cuda::device_limits(device), cuda::built_kernels());
}

}  // namespace attnlab::flash::detail
