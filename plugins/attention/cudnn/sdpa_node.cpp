#include "sdpa_node.h"

#include <cmath>

#include "attnlab/autograd.h"
#include "sdpa_inputs.h"

namespace attnlab::cudnn_attention {
namespace {

// The bf16 values cuDNN reads, off the tape: t's storage, or its conversion; cuDNN wants 16-byte
// aligned data.
Tensor as_bf16(const Tensor& t) {
  Tensor out = t.dtype() == DType::bf16 ? t.detach() : t.to(DType::bf16);
  if (reinterpret_cast<std::uintptr_t>(out.raw_data()) % 16 != 0) out = out.clone();
  return out;
}

// Raises the Error of a padding mask that broke cuDNN's rule in an earlier call on the session's
// device. The key lengths kernel checks each mask on the device (nothing is copied back or waited
// for); its verdict is read here, at the start of every call and of every backward, once the
// kernel has finished. In training the loss is read on the host between forward and backward,
// which waits for the kernel, so a bad mask stops the step in its own backward, before any
// parameter moves; in decoding, at the next step's first attention call.
void raise_mask_problem(CudnnSdpa& session, Device device) {
  const std::uint64_t code = session.take_mask_problem();
  ATTNLAB_CHECK(code == kNoMaskProblem,
                "attention cudnn: {} (in an earlier call on {}, found by the device-side check): cuDNN takes padding "
                "as per-batch key lengths, so each row must hold 0 for its first keys and -inf after them, with at "
                "least one real key; that call used the keys up to each row's last real key. Use scaled_dot or "
                "flash for other masks",
                describe_mask_problem(code), device.str());
}

struct Saved {
  std::shared_ptr<CudnnSdpa> session;
  SdpaProblem problem;
  float scale = 1.0f;
  DType dtype = DType::f32;        // of the caller's tensors
  Tensor q, k, v, o, stats;        // bf16 (stats f32), as cuDNN saw them
  Tensor seq_len_q, seq_len_kv;    // i32 [B] with padding
};

// Forward and backward of cuDNN's fused attention; the graphs are in sdpa_graph.cpp, where the
// backward's derivation is written out (dV = P^T dO, dS = P (dO V^T - rowsum(dO O)) scale,
// dQ = dS K, dK = dS^T Q, with P recomputed from the saved log-sum-exp statistics).
class CudnnAttentionNode final : public Node {
 public:
  explicit CudnnAttentionNode(Saved saved) : s_(std::move(saved)) {}

  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    if (grads.empty() || !grads[0].defined()) return {Tensor(), Tensor(), Tensor()};  // no gradient reached O
    const Device device = s_.q.device();
    raise_mask_problem(*s_.session, device);
    const Tensor d_o = as_bf16(grads[0]);
    Tensor d_q = Tensor::empty(s_.q.shape(), DType::bf16, device);
    Tensor d_k = Tensor::empty(s_.k.shape(), DType::bf16, device);
    Tensor d_v = Tensor::empty(s_.v.shape(), DType::bf16, device);
    BackwardBuffers b;
    b.q = s_.q.raw_data(), b.k = s_.k.raw_data(), b.v = s_.v.raw_data(), b.o = s_.o.raw_data();
    b.d_o = d_o.raw_data(), b.stats = s_.stats.raw_data();
    b.d_q = d_q.raw_data(), b.d_k = d_k.raw_data(), b.d_v = d_v.raw_data();
    if (s_.problem.padding) b.seq_len_q = s_.seq_len_q.raw_data(), b.seq_len_kv = s_.seq_len_kv.raw_data();
    b.scale = s_.scale;
    s_.session->backward(s_.problem, b);
    return {d_q.to(s_.dtype), d_k.to(s_.dtype), d_v.to(s_.dtype)};
  }
  void release() override { s_ = Saved(); }
  std::string_view name() const override { return "attention_cudnn"; }

 private:
  Saved s_;
};

}  // namespace

Tensor fused_attention(const std::shared_ptr<CudnnSdpa>& session, const CoreCall& c) {
  const Tensor &q = c.q, &k = c.k, &v = c.v;
  const Device device = q.device();
  ATTNLAB_CHECK(device.is_cuda(),
                "attention cudnn: cudnn attention runs on CUDA devices only; use scaled_dot or flash (got {})", q.str());
  for (const Tensor* t : {&k, &v})
    ATTNLAB_CHECK(t->device() == device && t->dtype() == q.dtype(),
                  "attention cudnn: query {}, key {} and value {} must share one device and dtype", q.str(), k.str(),
                  v.str());
  ATTNLAB_CHECK(q.dtype() == DType::bf16 || q.dtype() == DType::f32,
                "attention cudnn: dtype {} is not supported (bf16, or f32 converted to bf16); use scaled_dot for f64",
                dtype_name(q.dtype()));
  raise_mask_problem(*session, device);
  const bool bshd = c.q_layout == HeadLayout::bshd;
  ATTNLAB_CHECK(q.rank() == (bshd ? 3 : 4) && k.rank() == 4 && v.rank() == 4 && c.heads > 0 &&
                    (!bshd || q.dim(2) % c.heads == 0),
                "attention cudnn: query {} / key {} / value {} are not in the head layout for {} heads", q.shape().str(),
                k.shape().str(), v.shape().str(), c.heads);

  SdpaProblem p;
  p.batch = q.dim(0);
  p.heads = c.heads;
  p.s_q = q.dim(bshd ? 1 : 2);
  p.d_qk = bshd ? q.dim(2) / c.heads : q.dim(3);
  p.s_kv = k.dim(2);
  p.d_v = v.dim(3);
  p.q_layout = c.q_layout;
  p.kv_layout = HeadLayout::bhsd;
  ATTNLAB_CHECK(k.shape() == Shape({p.batch, p.heads, p.s_kv, p.d_qk}) && v.dim(0) == p.batch && v.dim(1) == p.heads &&
                    v.dim(2) == p.s_kv,
                "attention cudnn: query {}, key {} and value {} do not fit ({} heads)", q.shape().str(),
                k.shape().str(), v.shape().str(), c.heads);
  p.causal = causal_mask_needed(c.causal, p.s_q, p.s_kv);
  check_causal_alignment(p.causal, p.s_q, p.s_kv, CudnnSdpa::runtime_version());
  // A mask always takes the padded graphs: whether it pads anything is known only on the device.
  if (c.key_padding_mask.defined()) {
    ATTNLAB_CHECK(c.key_padding_mask.shape() == Shape({p.batch, p.s_kv}) && c.key_padding_mask.device() == device,
                  "attention cudnn: key_padding_mask {} should be [{}, {}] (batch, keys) on {}",
                  c.key_padding_mask.str(), p.batch, p.s_kv, device.str());
    p.padding = true;
  }
  check_causal_padding(p.causal, p.padding, p.s_q, p.s_kv);
  p.training = grad_enabled() && any_requires_grad({&q, &k, &v});
  check_problem(p);

  Saved s;
  s.session = session;
  s.problem = p;
  s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.d_qk)));
  s.dtype = q.dtype();
  s.q = as_bf16(q), s.k = as_bf16(k), s.v = as_bf16(v);
  s.o = Tensor::empty(bshd ? Shape{p.batch, p.s_q, p.heads * p.d_v} : Shape{p.batch, p.heads, p.s_q, p.d_v},
                      DType::bf16, device);
  if (p.training) s.stats = Tensor::empty({p.batch, p.heads, p.s_q, 1}, DType::f32, device);
  if (p.padding) {
    // 0 / -inf survive the conversion to f32 exactly (a finite f64 below f32's range becomes -inf).
    Tensor mask = c.key_padding_mask.dtype() == DType::f32 ? c.key_padding_mask
                                                            : c.key_padding_mask.to(DType::f32);
    s.seq_len_q = Tensor::empty({p.batch}, DType::i32, device);
    s.seq_len_kv = Tensor::empty({p.batch}, DType::i32, device);
    session->key_lengths(static_cast<const float*>(mask.raw_data()), p.batch, p.s_kv, static_cast<std::int32_t>(p.s_q),
                         static_cast<std::int32_t*>(s.seq_len_q.raw_data()),
                         static_cast<std::int32_t*>(s.seq_len_kv.raw_data()));
  }
  ForwardBuffers b;
  b.q = s.q.raw_data(), b.k = s.k.raw_data(), b.v = s.v.raw_data(), b.o = s.o.raw_data();
  if (p.training) b.stats = s.stats.raw_data();
  if (p.padding) b.seq_len_q = s.seq_len_q.raw_data(), b.seq_len_kv = s.seq_len_kv.raw_data();
  b.scale = s.scale;
  session->forward(p, b);

  Tensor out = s.o.to(s.dtype);
  s.o = s.o.detach();  // the node must not hold the tensor it is the history of
  if (p.training) record(std::make_shared<CudnnAttentionNode>(std::move(s)), {&q, &k, &v}, out);
  return out;
}

}  // namespace attnlab::cudnn_attention
