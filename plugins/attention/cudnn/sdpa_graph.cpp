// The SDPA operation graphs as data (see sdpa_graph.h). The op sequence follows the pattern that
// cuDNN's runtime-fusion engine recognises as fused flash attention (the one cudnn-frontend's SDPA
// nodes emit for cuDNN 9): masks as GEN_INDEX + comparison + BINARY_SELECT, the softmax spelled out
// as max / sub / exp / sum / div with log-sum-exp statistics, P cast to the I/O type for the
// second GEMM, and in the backward the FlashAttention-2 recomputation
//   D = rowsum(dO * O),  P = exp(S - stats),  dV = P^T dO,  dS = P * (dO V^T - D) * scale,
//   dK = dS^T Q,  dQ = dS K (accumulated in f32, then cast).
#include "sdpa_graph.h"

#include <algorithm>
#include <functional>

#include "attnlab/error.h"

namespace attnlab::cudnn_attention {

const GraphTensor& SdpaGraph::tensor(std::int64_t id) const {
  for (const auto& t : tensors)
    if (t.uid == id) return t;
  throw Error(fmt::format("cudnn attention graph: no tensor with uid {}", id));
}

bool SdpaGraph::has(std::int64_t id) const {
  return std::any_of(tensors.begin(), tensors.end(), [&](const GraphTensor& t) { return t.uid == id; });
}

std::vector<std::int64_t> SdpaGraph::bound_uids() const {
  std::vector<std::int64_t> out;
  for (const auto& t : tensors)
    if (!t.is_virtual) out.push_back(t.uid);
  std::sort(out.begin(), out.end());
  return out;
}

Dims head_strides(HeadLayout layout, std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d) {
  (void)b;
  if (layout == HeadLayout::bhsd) return {h * s * d, s * d, d, 1};
  return {s * h * d, d, h * d, 1};  // [B, T, h, d] memory, addressed as [b, h, s, d]
}

Dims swap_last_two(Dims dims) {
  std::swap(dims[2], dims[3]);
  return dims;
}

Dims packed_strides(const Dims& dims) {
  return {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
}

std::string SdpaProblem::str() const {
  return fmt::format("B={} h={} Tq={} Tk={} d_qk={} d_v={} q:{} kv:{}{}{}{}", batch, heads, s_q, s_kv, d_qk, d_v,
                     kHeadLayoutNames[static_cast<std::size_t>(q_layout)],
                     kHeadLayoutNames[static_cast<std::size_t>(kv_layout)], causal ? " causal" : "",
                     padding ? " padding" : "", training ? " training" : "");
}

std::size_t SdpaProblemHash::operator()(const SdpaProblem& p) const {
  std::size_t h = 0;
  auto mix = [&](std::int64_t v) { h ^= std::hash<std::int64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (std::int64_t v : {p.batch, p.heads, p.s_q, p.s_kv, p.d_qk, p.d_v}) mix(v);
  mix(static_cast<std::int64_t>(p.q_layout) | static_cast<std::int64_t>(p.kv_layout) << 1 |
      static_cast<std::int64_t>(p.causal) << 2 | static_cast<std::int64_t>(p.padding) << 3 |
      static_cast<std::int64_t>(p.training) << 4);
  return h;
}

void check_problem(const SdpaProblem& p) {
  ATTNLAB_CHECK(p.batch > 0 && p.heads > 0 && p.s_q > 0 && p.s_kv > 0,
                "attention cudnn: empty attention call ({})", p.str());
  for (std::int64_t d : {p.d_qk, p.d_v})
    ATTNLAB_CHECK(d % 8 == 0 && d >= 8 && d <= 128,
                  "attention cudnn: head size {} is not supported (cuDNN's fused attention takes multiples of 8 "
                  "up to 128); use scaled_dot or flash for this model",
                  d);
  ATTNLAB_CHECK(!p.causal || p.s_q <= p.s_kv,
                "attention cudnn: causal attention with {} queries over {} keys is not supported (the first {} "
                "queries would see no key); use scaled_dot or flash",
                p.s_q, p.s_kv, p.s_q - p.s_kv);
}

namespace {

// Appends tensors and operations; uids of virtual tensors count up from uid::kFirstVirtual.
class Builder {
 public:
  std::int64_t bound(std::int64_t id, std::string name, GraphDType dtype, Dims dims, Dims strides) {
    g_.tensors.push_back({id, std::move(name), dtype, dims, strides, false, false});
    return id;
  }
  // a by-value [1, 1, 1, 1] scalar
  std::int64_t scalar(std::int64_t id, std::string name, GraphDType dtype = GraphDType::f32) {
    g_.tensors.push_back({id, std::move(name), dtype, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true});
    return id;
  }
  std::int64_t seq_len(std::int64_t id, std::string name, std::int64_t batch) {  // i32 [b, 1, 1, 1]
    return bound(id, std::move(name), GraphDType::i32, {batch, 1, 1, 1}, {1, 1, 1, 1});
  }
  std::int64_t virt(std::string name, GraphDType dtype, Dims dims) {
    const std::int64_t id = next_++;
    g_.tensors.push_back({id, std::move(name), dtype, dims, packed_strides(dims), true, false});
    return id;
  }

  // c = a @ b into the tensor `c` (a uid), with optional M / N / K overrides.
  void matmul(std::string name, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t m = -1,
              std::int64_t n = -1, std::int64_t k = -1) {
    GraphOp op;
    op.kind = OpKind::matmul;
    op.name = std::move(name);
    op.x = a, op.b = b, op.y = c;
    op.m_override = m, op.n_override = n, op.k_override = k;
    g_.ops.push_back(std::move(op));
  }
  std::int64_t matmul_to(std::string name, std::int64_t a, std::int64_t b, Dims dims, std::int64_t m = -1,
                         std::int64_t n = -1, std::int64_t k = -1) {
    const std::int64_t c = virt(name, GraphDType::f32, dims);
    matmul(std::move(name), a, b, c, m, n, k);
    return c;
  }

  // y = mode(x, b, t) into the tensor `y` (a uid).
  void pointwise(std::string name, PointwiseMode mode, std::int64_t x, std::int64_t b, std::int64_t t,
                 std::int64_t y, GraphDType compute = GraphDType::f32, std::int64_t axis = -1) {
    GraphOp op;
    op.kind = OpKind::pointwise;
    op.name = std::move(name);
    op.pointwise = mode;
    op.compute = compute;
    op.axis = axis;
    op.x = x, op.b = b, op.t = t, op.y = y;
    g_.ops.push_back(std::move(op));
  }
  std::int64_t pointwise_to(std::string name, PointwiseMode mode, std::int64_t x, std::int64_t b, Dims dims,
                            GraphDType out = GraphDType::f32) {
    const std::int64_t y = virt(name, out, dims);
    pointwise(std::move(name), mode, x, b, -1, y);
    return y;
  }

  void reduce(std::string name, ReductionMode mode, std::int64_t x, std::int64_t y) {
    GraphOp op;
    op.kind = OpKind::reduction;
    op.name = std::move(name);
    op.reduction = mode;
    op.x = x, op.y = y;
    g_.ops.push_back(std::move(op));
  }
  std::int64_t reduce_to(std::string name, ReductionMode mode, std::int64_t x, Dims dims) {
    const std::int64_t y = virt(name, GraphDType::f32, dims);
    reduce(std::move(name), mode, x, y);
    return y;
  }

  // y: x seen with dims / strides (a view of the same elements), in dtype.
  std::int64_t reshape(std::string name, std::int64_t x, Dims dims, Dims strides, GraphDType dtype) {
    const std::int64_t y = next_++;
    g_.tensors.push_back({y, name, dtype, dims, strides, true, false});
    GraphOp op;
    op.kind = OpKind::reshape;
    op.name = std::move(name);
    op.x = x, op.y = y;
    g_.ops.push_back(std::move(op));
    return y;
  }

  // The scores `s` where key j of row b is a real key (j < seq_len_kv[b]) and query i exists
  // (i < seq_len_q[b]); the fill value elsewhere.
  std::int64_t mask_padding(const std::string& tag, std::int64_t s, Dims dims) {
    const std::int64_t row = index(tag + " row", s, dims, 2), col = index(tag + " col", s, dims, 3);
    const std::int64_t in_q = compare(tag + " row < seq_len_q", PointwiseMode::cmp_lt, row, uid::seq_len_q, dims);
    const std::int64_t in_kv = compare(tag + " col < seq_len_kv", PointwiseMode::cmp_lt, col, uid::seq_len_kv, dims);
    const std::int64_t keep = virt(tag + " keep", GraphDType::boolean, dims);
    pointwise(tag + " keep", PointwiseMode::logical_and, in_q, in_kv, -1, keep, GraphDType::boolean);
    return select(tag, s, keep, dims);
  }
  // The scores `s` where key j <= query i + (s_kv - s_q); the fill value elsewhere. With
  // s_q == s_kv that is the top-left diagonal, row >= col. Otherwise the diagonal is aligned
  // bottom-right as cudnn-frontend spells it for fixed lengths: the row index plus the by-value
  // i32 s_kv, minus s_q, compared with the column (i32 arithmetic throughout). The offset is the
  // tensors' s_kv - s_q even with padding (the core's rule; cudnn-frontend would take the
  // per-batch lengths there).
  std::int64_t mask_causal(const std::string& tag, std::int64_t s, Dims dims, bool bottom_right) {
    std::int64_t row = index(tag + " row", s, dims, 2);
    const std::int64_t col = index(tag + " col", s, dims, 3);
    if (bottom_right) {
      const std::int64_t plus = virt(tag + " row + s_kv", GraphDType::i32, dims);
      pointwise(tag + " row + s_kv", PointwiseMode::add, row, uid::causal_s_kv, -1, plus, GraphDType::i32);
      row = virt(tag + " row + s_kv - s_q", GraphDType::i32, dims);
      pointwise(tag + " row + s_kv - s_q", PointwiseMode::sub, plus, uid::causal_s_q, -1, row, GraphDType::i32);
    }
    const std::int64_t keep = compare(tag + " row >= col", PointwiseMode::cmp_ge, row, col, dims);
    return select(tag, s, keep, dims);
  }

  SdpaGraph take() { return std::move(g_); }

 private:
  std::int64_t index(std::string name, std::int64_t of, Dims dims, std::int64_t axis) {
    const std::int64_t y = virt(name, GraphDType::i32, dims);
    pointwise(std::move(name), PointwiseMode::gen_index, of, -1, -1, y, GraphDType::i32, axis);
    return y;
  }
  std::int64_t compare(std::string name, PointwiseMode mode, std::int64_t a, std::int64_t b, Dims dims) {
    const std::int64_t y = virt(name, GraphDType::boolean, dims);
    pointwise(std::move(name), mode, a, b, -1, y, GraphDType::boolean);
    return y;
  }
  std::int64_t select(const std::string& tag, std::int64_t s, std::int64_t keep, Dims dims) {
    const std::int64_t y = virt(tag + " select", GraphDType::f32, dims);
    pointwise(tag + " select", PointwiseMode::binary_select, s, uid::mask_fill, keep, y);
    return y;
  }

  SdpaGraph g_;
  std::int64_t next_ = uid::kFirstVirtual;
};

struct Common {
  Dims q, kt, v, o, scores, rows;
  std::int64_t seq_q = -1, seq_kv = -1;  // uids when padding
};

// The tensors both graphs bind: Q, K^T (K in memory, transposed by strides), V or V^T, O, the
// scale, the masks' fill value and sequence lengths.
Common bind_common(Builder& g, const SdpaProblem& p, bool v_transposed) {
  const std::int64_t b = p.batch, h = p.heads, sq = p.s_q, skv = p.s_kv;
  Common c;
  c.q = {b, h, sq, p.d_qk};
  c.kt = {b, h, p.d_qk, skv};
  c.v = {b, h, skv, p.d_v};
  c.o = {b, h, sq, p.d_v};
  c.scores = {b, h, sq, skv};
  c.rows = {b, h, sq, 1};
  g.bound(uid::q, "Q", GraphDType::bf16, c.q, head_strides(p.q_layout, b, h, sq, p.d_qk));
  g.bound(uid::k, "K^T", GraphDType::bf16, c.kt, swap_last_two(head_strides(p.kv_layout, b, h, skv, p.d_qk)));
  const Dims v_strides = head_strides(p.kv_layout, b, h, skv, p.d_v);
  if (v_transposed)
    g.bound(uid::v, "V^T", GraphDType::bf16, swap_last_two(c.v), swap_last_two(v_strides));
  else
    g.bound(uid::v, "V", GraphDType::bf16, c.v, v_strides);
  g.bound(uid::o, "O", GraphDType::bf16, c.o, head_strides(p.q_layout, b, h, sq, p.d_v));
  g.scalar(uid::scale, "attn_scale");
  if (p.padding || p.causal) g.scalar(uid::mask_fill, "mask_fill");
  if (p.causal && sq != skv) {
    g.scalar(uid::causal_s_kv, "causal_s_kv", GraphDType::i32);
    g.scalar(uid::causal_s_q, "causal_s_q", GraphDType::i32);
  }
  if (p.padding) {
    c.seq_q = g.seq_len(uid::seq_len_q, "seq_len_q", b);
    c.seq_kv = g.seq_len(uid::seq_len_kv, "seq_len_kv", b);
  }
  return c;
}

}  // namespace

SdpaGraph sdpa_forward_graph(const SdpaProblem& p) {
  check_problem(p);
  Builder g;
  const Common c = bind_common(g, p, false);
  std::int64_t s = g.matmul_to("bmm1 Q K^T", uid::q, uid::k, c.scores, c.seq_q, c.seq_kv);
  s = g.pointwise_to("attn_scale", PointwiseMode::mul, s, uid::scale, c.scores);
  if (p.padding) s = g.mask_padding("padding", s, c.scores);
  if (p.causal) s = g.mask_causal("causal", s, c.scores, p.s_q != p.s_kv);

  const std::int64_t max = g.reduce_to("softmax max", ReductionMode::max, s, c.rows);
  const std::int64_t z = g.pointwise_to("softmax sub max", PointwiseMode::sub, s, max, c.scores);
  const std::int64_t e = g.pointwise_to("softmax exp", PointwiseMode::exp, z, -1, c.scores);
  const std::int64_t sum = g.reduce_to("softmax sum", ReductionMode::add, e, c.rows);
  const std::int64_t log_sum = g.pointwise_to("softmax log sum", PointwiseMode::log, sum, -1, c.rows);
  const std::int64_t stats = p.training ? g.bound(uid::stats, "stats", GraphDType::f32, c.rows, packed_strides(c.rows))
                                        : g.virt("stats", GraphDType::f32, c.rows);
  g.pointwise("softmax stats", PointwiseMode::add, max, log_sum, -1, stats);
  // The second GEMM takes P in the I/O type.
  const std::int64_t prob = g.pointwise_to("softmax div", PointwiseMode::div, e, sum, c.scores, GraphDType::bf16);
  g.matmul("bmm2 P V", prob, uid::v, uid::o, c.seq_q, -1, c.seq_kv);
  return g.take();
}

SdpaGraph sdpa_backward_graph(const SdpaProblem& p) {
  check_problem(p);
  Builder g;
  const Common c = bind_common(g, p, true);
  const std::int64_t b = p.batch, h = p.heads, sq = p.s_q, skv = p.s_kv;
  g.bound(uid::d_o, "dO", GraphDType::bf16, c.o, head_strides(p.q_layout, b, h, sq, p.d_v));
  g.bound(uid::stats, "stats", GraphDType::f32, c.rows, packed_strides(c.rows));
  g.bound(uid::d_q, "dQ", GraphDType::bf16, c.q, head_strides(p.q_layout, b, h, sq, p.d_qk));
  g.bound(uid::d_k, "dK", GraphDType::bf16, {b, h, skv, p.d_qk}, head_strides(p.kv_layout, b, h, skv, p.d_qk));
  g.bound(uid::d_v, "dV", GraphDType::bf16, c.v, head_strides(p.kv_layout, b, h, skv, p.d_v));
  g.scalar(uid::one, "one");
  g.bound(uid::softmax_sum, "softmax_sum", GraphDType::f32, c.rows, packed_strides(c.rows));
  g.bound(uid::d_q_accum, "dQ_accum", GraphDType::f32, c.q, packed_strides(c.q));

  // D = rowsum(dO * O)
  const std::int64_t d_o_o = g.pointwise_to("dO * O", PointwiseMode::mul, uid::d_o, uid::o, c.o);
  const std::int64_t d_sum = g.reduce_to("rowsum dO * O", ReductionMode::add, d_o_o, c.rows);
  g.pointwise("softmax_sum", PointwiseMode::mul, d_sum, uid::one, -1, uid::softmax_sum);

  // P = exp(scale Q K^T (masked) - stats)
  std::int64_t s = g.matmul_to("bmm Q K^T", uid::q, uid::k, c.scores, c.seq_q, c.seq_kv);
  s = g.pointwise_to("attn_scale", PointwiseMode::mul, s, uid::scale, c.scores);
  if (p.padding) s = g.mask_padding("padding", s, c.scores);
  s = g.pointwise_to("sub stats", PointwiseMode::sub, s, uid::stats, c.scores);
  if (p.padding) s = g.mask_padding("padding after stats", s, c.scores);
  if (p.causal) s = g.mask_causal("causal", s, c.scores, p.s_q != p.s_kv);
  const std::int64_t prob = g.pointwise_to("exp", PointwiseMode::exp, s, -1, c.scores);

  // dV = P^T dO
  const Dims transposed{b, h, skv, sq};
  const Dims transposed_strides = swap_last_two(packed_strides(c.scores));
  const std::int64_t prob_t = g.reshape("P^T", prob, transposed, transposed_strides, GraphDType::bf16);
  g.matmul("bmm P^T dO", prob_t, uid::d_o, uid::d_v, c.seq_kv, -1, c.seq_q);

  // dS = P * (dO V^T - D) * scale
  std::int64_t ds = g.matmul_to("bmm dO V^T", uid::d_o, uid::v, c.scores, c.seq_q, c.seq_kv);
  ds = g.pointwise_to("dP * one", PointwiseMode::mul, ds, uid::one, c.scores);
  ds = g.pointwise_to("dP - softmax_sum", PointwiseMode::sub, ds, uid::softmax_sum, c.scores);
  ds = g.pointwise_to("dS", PointwiseMode::mul, ds, prob, c.scores);
  ds = g.pointwise_to("dS * attn_scale", PointwiseMode::mul, ds, uid::scale, c.scores);

  // dK = dS^T Q, dQ = dS K
  const std::int64_t ds_t = g.reshape("dS^T", ds, transposed, transposed_strides, GraphDType::bf16);
  g.matmul("bmm dS^T Q", ds_t, uid::q, uid::d_k, c.seq_kv, -1, c.seq_q);
  const std::int64_t k = g.reshape("K", uid::k, {b, h, skv, p.d_qk}, head_strides(p.kv_layout, b, h, skv, p.d_qk),
                                   GraphDType::bf16);
  g.matmul("bmm dS K", ds, k, uid::d_q_accum, c.seq_q, -1, c.seq_kv);
  g.pointwise("dQ", PointwiseMode::identity, uid::d_q_accum, -1, -1, uid::d_q);
  return g.take();
}

}  // namespace attnlab::cudnn_attention
