#pragma once
// The operation graphs of cuDNN's fused scaled dot-product attention ("fused flash attention"
// runtime-fusion pattern), described as plain data: tensors (uid, dims, strides, dtype, virtual or
// bound at execution) and operations (matmul, pointwise, reduction, reshape) in execution order.
// No cuDNN here: cudnn_backend.cpp turns a graph into backend descriptors one to one, and the CPU
// tests run the same description through an interpreter against the scaled_dot reference.
//
// Dims are always [b, h, s, d]-style 4-tuples, as cuDNN's SDPA graphs expect. A bound tensor's
// strides say where its elements lie in memory; virtual tensors are packed row-major.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::cudnn_attention {

using Dims = std::array<std::int64_t, 4>;

enum class GraphDType : std::uint8_t { bf16, f32, i32, boolean };
inline constexpr std::array<std::string_view, 4> kGraphDTypeNames = {"bf16", "f32", "i32", "boolean"};
static_assert(kGraphDTypeNames.size() == static_cast<std::size_t>(GraphDType::boolean) + 1);

enum class OpKind : std::uint8_t { matmul, pointwise, reduction, reshape };
inline constexpr std::array<std::string_view, 4> kOpKindNames = {"matmul", "pointwise", "reduction", "reshape"};
static_assert(kOpKindNames.size() == static_cast<std::size_t>(OpKind::reshape) + 1);

enum class PointwiseMode : std::uint8_t {
  add, sub, mul, div, exp, log, identity, gen_index, cmp_ge, cmp_lt, logical_and, binary_select
};
inline constexpr std::array<std::string_view, 12> kPointwiseModeNames = {
    "add", "sub", "mul", "div", "exp", "log", "identity", "gen_index", "cmp_ge", "cmp_lt", "logical_and",
    "binary_select"};
static_assert(kPointwiseModeNames.size() == static_cast<std::size_t>(PointwiseMode::binary_select) + 1);

enum class ReductionMode : std::uint8_t { max, add };
inline constexpr std::array<std::string_view, 2> kReductionModeNames = {"max", "add"};
static_assert(kReductionModeNames.size() == static_cast<std::size_t>(ReductionMode::add) + 1);

struct GraphTensor {
  std::int64_t uid = 0;
  std::string name;
  GraphDType dtype = GraphDType::f32;
  Dims dims{};
  Dims strides{};
  bool is_virtual = false;  // produced and consumed inside the fused kernel, never in memory
  bool by_value = false;    // a host scalar (f32 or i32) passed by pointer at execution
};

// One operation. matmul: c[y] = a[x] @ b[b]; pointwise: y = mode(x, b, t) (binary_select:
// y = t ? x : b; gen_index: y = the index along `axis` of x's shape); reduction: y = reduce x over
// the axes where y has extent 1; reshape: y is x under y's dims and strides (a transposed view).
struct GraphOp {
  OpKind kind = OpKind::pointwise;
  std::string name;
  PointwiseMode pointwise = PointwiseMode::identity;
  ReductionMode reduction = ReductionMode::add;
  GraphDType compute = GraphDType::f32;
  std::int64_t axis = -1;  // gen_index only
  std::int64_t x = -1, b = -1, t = -1, y = -1;  // tensor uids, -1 when absent
  // matmul only: per-batch [b, 1, 1, 1] i32 tensors limiting the GEMM's M, N, K (variable
  // sequence lengths); rows / columns past them are not computed.
  std::int64_t m_override = -1, n_override = -1, k_override = -1;
};

struct SdpaGraph {
  std::vector<GraphTensor> tensors;
  std::vector<GraphOp> ops;
  // Throws an Error naming the uid when the graph has no such tensor.
  const GraphTensor& tensor(std::int64_t uid) const;
  bool has(std::int64_t uid) const;
  // The uids that must be bound at execution (every non-virtual tensor), ascending.
  std::vector<std::int64_t> bound_uids() const;
};

// The uids of the tensors bound at execution; virtual tensors count up from kFirstVirtual.
namespace uid {
inline constexpr std::int64_t q = 1, k = 2, v = 3, o = 4, stats = 5, scale = 6, mask_fill = 7, seq_len_q = 8,
                              seq_len_kv = 9, d_o = 10, d_q = 11, d_k = 12, d_v = 13, softmax_sum = 14,
                              d_q_accum = 15, one = 16, causal_s_kv = 17, causal_s_q = 18;
inline constexpr std::int64_t kFirstVirtual = 100;
}  // namespace uid

// Where a [b, h, s, d] operand lies in memory: bhsd is [B, h, T, d] contiguous (split heads, the
// KV cache); bshd is [B, T, h, d] contiguous, i.e. a projection's [B, T, h * d] output viewed as
// heads without a copy.
enum class HeadLayout : std::uint8_t { bhsd, bshd };
inline constexpr std::array<std::string_view, 2> kHeadLayoutNames = {"bhsd", "bshd"};
static_assert(kHeadLayoutNames.size() == static_cast<std::size_t>(HeadLayout::bshd) + 1);

// Strides of dims [b, h, s, d] for an operand of that layout.
Dims head_strides(HeadLayout layout, std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d);
// dims / strides with the last two axes swapped (K -> K^T as a view).
Dims swap_last_two(Dims dims);
// Row-major strides of dims.
Dims packed_strides(const Dims& dims);

// One attention call as the graphs see it. Everything here changes the graph or its dims, so it
// is also the key of the execution-plan cache; the scale is a value bound at execution.
struct SdpaProblem {
  std::int64_t batch = 1, heads = 1, s_q = 1, s_kv = 1, d_qk = 8, d_v = 8;
  HeadLayout q_layout = HeadLayout::bhsd;   // also O, dO and dQ
  HeadLayout kv_layout = HeadLayout::bhsd;  // K, V, dK, dV
  // Query i sees key j <= i + (s_kv - s_q), the core's rule (AttentionCore::causal): the top-left
  // diagonal when s_q == s_kv, else bottom-right aligned (the caller ensures s_q <= s_kv).
  bool causal = false;
  bool padding = false;  // per-batch key lengths (seq_len_kv); seq_len_q = s_q for every row
  bool training = true;  // the forward writes the softmax statistics for the backward
  friend bool operator==(const SdpaProblem&, const SdpaProblem&) = default;
  std::string str() const;
};
struct SdpaProblemHash {
  std::size_t operator()(const SdpaProblem& p) const;
};

// Throws an Error naming the problem when the graphs cannot serve it (head sizes multiples of 8
// up to 128, positive sizes, causal only with s_q <= s_kv).
void check_problem(const SdpaProblem& p);

// Q, K, V -> O (and the softmax statistics, log-sum-exp of the scaled masked scores per query,
// when training). Bound: q, k (as K^T), v, o, scale, [stats], [mask_fill], [seq_len_q, seq_len_kv],
// and with a bottom-right causal mask (s_q < s_kv) the i32 values causal_s_kv = s_kv and
// causal_s_q = s_q.
SdpaGraph sdpa_forward_graph(const SdpaProblem& p);
// dO -> dQ, dK, dV from Q, K, V, O and the statistics. Bound additionally: d_o, d_q, d_k, d_v,
// one, softmax_sum and d_q_accum (f32 scratch the caller provides; d_q_accum zeroed).
SdpaGraph sdpa_backward_graph(const SdpaProblem& p);

}  // namespace attnlab::cudnn_attention
