// The cudnn plugin's graph construction, on the CPU: the layouts' strides, the graphs' structure
// and bound tensors, and (through a reference interpreter) that the forward and backward graphs
// compute scaled dot-product attention and its gradients exactly like the core's ops in f64, with
// padding, causal masking, one-step decoding, d_k != d_v and both head layouts. Also the
// CPU reference of the key lengths the plugin's kernel takes from the additive mask.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>

#include "attnlab/attnlab.h"
#include "plugins/cudnn_graph_interpreter.h"
#include "sdpa_graph.h"
#include "sdpa_inputs.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using namespace attnlab::cudnn_attention;
using attnlab::cudnn_attention::testing::Buffers;
namespace graph_testing = attnlab::cudnn_attention::testing;

namespace {

// Structural rules every graph must follow: unique uids, every input bound or produced by an
// earlier op, every op output written once, every virtual tensor produced and consumed, and dims
// that fit each op.
void validate(const SdpaGraph& g) {
  std::set<std::int64_t> uids, written, read;
  for (const auto& t : g.tensors) CHECK_MESSAGE(uids.insert(t.uid).second, "duplicate uid ", t.uid);
  for (const auto& t : g.tensors)
    if (!t.is_virtual) written.insert(t.uid);  // bound tensors are available (outputs are overwritten)
  std::set<std::int64_t> produced;
  for (const auto& op : g.ops) {
    CAPTURE(op.name);
    for (std::int64_t in : {op.x, op.b, op.t, op.m_override, op.n_override, op.k_override}) {
      if (in < 0) continue;
      REQUIRE(g.has(in));
      CHECK_MESSAGE((written.count(in) || produced.count(in)), "reads ", g.tensor(in).name, " before it is written");
      read.insert(in);
    }
    REQUIRE(g.has(op.y));
    CHECK_FALSE(g.tensor(op.y).by_value);
    CHECK_MESSAGE(produced.insert(op.y).second, g.tensor(op.y).name, " is written twice");
    const Dims& y = g.tensor(op.y).dims;
    auto fits = [&](std::int64_t in) {
      if (in < 0) return true;
      const Dims& d = g.tensor(in).dims;
      for (int a = 0; a < 4; ++a)
        if (d[a] != y[a] && d[a] != 1) return false;
      return true;
    };
    switch (op.kind) {
      case OpKind::matmul: {
        const Dims &a = g.tensor(op.x).dims, &b = g.tensor(op.b).dims;
        CHECK(a[3] == b[2]);
        CHECK(a[2] == y[2]);
        CHECK(b[3] == y[3]);
        CHECK(((a[0] == y[0] || a[0] == 1) && (b[0] == y[0] || b[0] == 1) && a[1] == y[1] && b[1] == y[1]));
        break;
      }
      case OpKind::pointwise:
        CHECK(fits(op.x));
        CHECK(fits(op.b));
        CHECK(fits(op.t));
        if (op.pointwise == PointwiseMode::gen_index) {
          CHECK((op.axis == 2 || op.axis == 3));
          CHECK(g.tensor(op.y).dtype == GraphDType::i32);
        }
        if (op.pointwise == PointwiseMode::cmp_ge || op.pointwise == PointwiseMode::cmp_lt ||
            op.pointwise == PointwiseMode::logical_and)
          CHECK(g.tensor(op.y).dtype == GraphDType::boolean);
        if (op.pointwise == PointwiseMode::binary_select) {
          REQUIRE(op.t >= 0);
          CHECK(g.tensor(op.t).dtype == GraphDType::boolean);
        }
        break;
      case OpKind::reduction: {
        const Dims& x = g.tensor(op.x).dims;
        for (int a = 0; a < 4; ++a) CHECK((y[a] == x[a] || y[a] == 1));
        break;
      }
      case OpKind::reshape:
        CHECK(y == swap_last_two(g.tensor(op.x).dims));
        CHECK(graph_testing::extent(g.tensor(op.y)) == graph_testing::extent(g.tensor(op.x)));
        break;
    }
  }
  for (const auto& t : g.tensors) {
    if (!t.is_virtual) continue;
    CHECK_MESSAGE(produced.count(t.uid), "virtual ", t.name, " is never produced");
    // Without training the statistics stay virtual and unread, as in cuDNN's own SDPA pattern.
    if (t.name != "stats") CHECK_MESSAGE(read.count(t.uid), "virtual ", t.name, " is never read");
  }
}

// x [B, h, S, d] (f64, CPU) as the memory of `layout`, and back.
std::vector<double> to_layout(const Tensor& x, HeadLayout layout) {
  return layout == HeadLayout::bhsd ? x.to_vector<double>() : permute(x, {0, 2, 1, 3}).to_vector<double>();
}
Tensor from_layout(const std::vector<double>& v, const Shape& bhsd, HeadLayout layout) {
  if (layout == HeadLayout::bhsd) return Tensor::from_vector<double>(bhsd, v);
  return permute(Tensor::from_vector<double>({bhsd[0], bhsd[2], bhsd[1], bhsd[3]}, v), {0, 2, 1, 3});
}

struct Case {
  SdpaProblem p;
  bool causal = false;                // the attention contract's causal flag
  std::vector<std::int32_t> lengths;  // key lengths; empty: no padding
};

struct Result {
  Tensor o, stats, dq, dk, dv;
};

Tensor leaf(const Shape& shape, std::uint64_t seed) {
  Tensor t = attnlab::testing::random_tensor(shape, seed, -1, 1, DType::f64);
  t.set_requires_grad();
  return t;
}

// The core's ops in f64: softmax(q k^T / sqrt(d) + mask, causal) v, its gradients for d_out, and
// the log-sum-exp of the masked scaled scores per query.
Result reference(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& d_out) {
  const auto& p = c.p;
  Tensor mask;
  if (!c.lengths.empty()) {
    std::vector<double> m(static_cast<std::size_t>(p.batch * p.s_kv), 0.0);
    for (std::int64_t b = 0; b < p.batch; ++b)
      for (std::int64_t j = c.lengths[static_cast<std::size_t>(b)]; j < p.s_kv; ++j)
        m[static_cast<std::size_t>(b * p.s_kv + j)] = -std::numeric_limits<double>::infinity();
    mask = Tensor::from_vector<double>({p.batch, 1, 1, p.s_kv}, m);
  }
  Tensor scores = scale(matmul(q, k, false, true), 1.0 / std::sqrt(static_cast<double>(p.d_qk)));
  Tensor o = matmul(softmax(scores, mask, c.causal), v);
  o.backward(d_out);
  // log-sum-exp over the keys each query may see
  const auto s = scores.to_vector<double>();
  std::vector<double> lse(static_cast<std::size_t>(p.batch * p.heads * p.s_q));
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.heads; ++h)
      for (std::int64_t i = 0; i < p.s_q; ++i) {
        const std::int64_t row = (b * p.heads + h) * p.s_q + i;
        double sum = 0;
        for (std::int64_t j = 0; j < p.s_kv; ++j) {
          if (!c.lengths.empty() && j >= c.lengths[static_cast<std::size_t>(b)]) continue;
          if (c.causal && j > i + (p.s_kv - p.s_q)) continue;
          sum += std::exp(s[static_cast<std::size_t>(row * p.s_kv + j)]);
        }
        lse[static_cast<std::size_t>(row)] = std::log(sum);
      }
  return {o.detach(), Tensor::from_vector<double>({p.batch, p.heads, p.s_q, 1}, lse), q.grad(), k.grad(), v.grad()};
}

// The forward graph (training), then the backward graph, through the interpreter.
Result run_graphs(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& d_out) {
  const auto& p = c.p;
  const std::int64_t rows = p.batch * p.heads * p.s_q;
  Buffers buf;
  buf[uid::q] = to_layout(q, p.q_layout);
  buf[uid::k] = to_layout(k, p.kv_layout);
  buf[uid::v] = to_layout(v, p.kv_layout);
  buf[uid::o].assign(static_cast<std::size_t>(rows * p.d_v), 0.0);
  buf[uid::stats].assign(static_cast<std::size_t>(rows), 0.0);
  buf[uid::scale] = {1.0 / std::sqrt(static_cast<double>(p.d_qk))};
  buf[uid::mask_fill] = {static_cast<double>(std::numeric_limits<float>::lowest())};
  buf[uid::causal_s_kv] = {static_cast<double>(p.s_kv)};
  buf[uid::causal_s_q] = {static_cast<double>(p.s_q)};
  if (p.padding) {
    buf[uid::seq_len_q].assign(static_cast<std::size_t>(p.batch), static_cast<double>(p.s_q));
    buf[uid::seq_len_kv].assign(c.lengths.begin(), c.lengths.end());
  }
  const SdpaGraph forward = sdpa_forward_graph(p);
  validate(forward);
  graph_testing::run_graph(forward, buf);
  Result r;
  r.o = from_layout(buf[uid::o], {p.batch, p.heads, p.s_q, p.d_v}, p.q_layout);
  r.stats = Tensor::from_vector<double>({p.batch, p.heads, p.s_q, 1}, buf[uid::stats]);
  // Without training the graph drops the statistics output and computes the same O.
  SdpaProblem inference = p;
  inference.training = false;
  Buffers inference_buf = buf;
  inference_buf.erase(uid::stats);
  inference_buf[uid::o].assign(inference_buf[uid::o].size(), 0.0);
  graph_testing::run_graph(sdpa_forward_graph(inference), inference_buf);
  CHECK(inference_buf[uid::o] == buf[uid::o]);

  buf[uid::d_o] = to_layout(d_out, p.q_layout);
  buf[uid::d_q].assign(static_cast<std::size_t>(rows * p.d_qk), 0.0);
  buf[uid::d_k].assign(static_cast<std::size_t>(p.batch * p.heads * p.s_kv * p.d_qk), 0.0);
  buf[uid::d_v].assign(static_cast<std::size_t>(p.batch * p.heads * p.s_kv * p.d_v), 0.0);
  buf[uid::one] = {1.0};
  buf[uid::softmax_sum].assign(static_cast<std::size_t>(rows), 0.0);
  buf[uid::d_q_accum].assign(static_cast<std::size_t>(rows * p.d_qk), 0.0);
  const SdpaGraph backward = sdpa_backward_graph(p);
  validate(backward);
  graph_testing::run_graph(backward, buf);
  r.dq = from_layout(buf[uid::d_q], {p.batch, p.heads, p.s_q, p.d_qk}, p.q_layout);
  r.dk = from_layout(buf[uid::d_k], {p.batch, p.heads, p.s_kv, p.d_qk}, p.kv_layout);
  r.dv = from_layout(buf[uid::d_v], {p.batch, p.heads, p.s_kv, p.d_v}, p.kv_layout);
  return r;
}

void check_case(Case c, std::uint64_t seed) {
  c.p.padding = !c.lengths.empty();
  c.p.causal = causal_mask_needed(c.causal, c.p.s_q, c.p.s_kv);
  CAPTURE(c.p.str());
  const auto& p = c.p;
  const Tensor q = leaf({p.batch, p.heads, p.s_q, p.d_qk}, seed);
  const Tensor k = leaf({p.batch, p.heads, p.s_kv, p.d_qk}, seed + 1);
  const Tensor v = leaf({p.batch, p.heads, p.s_kv, p.d_v}, seed + 2);
  const Tensor d_out = attnlab::testing::random_tensor({p.batch, p.heads, p.s_q, p.d_v}, seed + 3, -1, 1, DType::f64);
  const Result got = run_graphs(c, q.detach(), k.detach(), v.detach(), d_out);
  const Result want = reference(c, q, k, v, d_out);
  const auto tol = attnlab::testing::tolerance_for(DType::f64);
  CHECK_TENSOR_NEAR(got.o, want.o, tol);
  CHECK_TENSOR_NEAR(got.stats, want.stats, tol);
  CHECK_TENSOR_NEAR(got.dq, want.dq, tol);
  CHECK_TENSOR_NEAR(got.dk, want.dk, tol);
  CHECK_TENSOR_NEAR(got.dv, want.dv, tol);
}

SdpaProblem problem(std::int64_t b, std::int64_t h, std::int64_t sq, std::int64_t skv, std::int64_t dqk, std::int64_t dv,
                    HeadLayout q_layout = HeadLayout::bhsd) {
  SdpaProblem p;
  p.batch = b, p.heads = h, p.s_q = sq, p.s_kv = skv, p.d_qk = dqk, p.d_v = dv, p.q_layout = q_layout;
  return p;
}

}  // namespace

TEST_CASE("cudnn head strides address bhsd and bshd memory") {
  const std::int64_t B = 2, H = 3, S = 4, D = 8;
  const Dims bhsd = head_strides(HeadLayout::bhsd, B, H, S, D), bshd = head_strides(HeadLayout::bshd, B, H, S, D);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t d = 0; d < D; ++d) {
          CHECK(b * bhsd[0] + h * bhsd[1] + s * bhsd[2] + d * bhsd[3] == ((b * H + h) * S + s) * D + d);
          CHECK(b * bshd[0] + h * bshd[1] + s * bshd[2] + d * bshd[3] == ((b * S + s) * H + h) * D + d);
        }
  CHECK(swap_last_two({1, 2, 3, 4}) == Dims{1, 2, 4, 3});
  CHECK(packed_strides({2, 3, 4, 5}) == Dims{60, 20, 5, 1});
}

TEST_CASE("cudnn graphs bind the tensors the plugin provides") {
  SdpaProblem p = problem(2, 2, 4, 4, 8, 16);
  p.training = false;
  validate(sdpa_forward_graph(p));
  CHECK(sdpa_forward_graph(p).bound_uids() == std::vector<std::int64_t>{uid::q, uid::k, uid::v, uid::o, uid::scale});
  p.training = true;
  CHECK(sdpa_forward_graph(p).bound_uids() ==
        std::vector<std::int64_t>{uid::q, uid::k, uid::v, uid::o, uid::stats, uid::scale});
  p.causal = true;
  CHECK(sdpa_forward_graph(p).bound_uids() ==
        std::vector<std::int64_t>{uid::q, uid::k, uid::v, uid::o, uid::stats, uid::scale, uid::mask_fill});
  p.causal = false;
  p.padding = true;
  CHECK(sdpa_forward_graph(p).bound_uids() == std::vector<std::int64_t>{uid::q, uid::k, uid::v, uid::o, uid::stats,
                                                                        uid::scale, uid::mask_fill, uid::seq_len_q,
                                                                        uid::seq_len_kv});
  CHECK(sdpa_backward_graph(p).bound_uids() ==
        std::vector<std::int64_t>{uid::q, uid::k, uid::v, uid::o, uid::stats, uid::scale, uid::mask_fill, uid::seq_len_q,
                                  uid::seq_len_kv, uid::d_o, uid::d_q, uid::d_k, uid::d_v, uid::softmax_sum,
                                  uid::d_q_accum, uid::one});
  // K enters as K^T: the same memory with the last two strides swapped.
  // (The graph is kept: tensor() returns a reference into it.)
  const SdpaGraph f = sdpa_forward_graph(p);
  const GraphTensor& kt = f.tensor(uid::k);
  CHECK(kt.dims == Dims{2, 2, 8, 4});
  CHECK(kt.strides == Dims{2 * 4 * 8, 4 * 8, 1, 8});
  // the virtual scores are f32, P is cast to bf16 for the second GEMM
  CHECK(f.tensor(f.ops.front().y).dtype == GraphDType::f32);
  CHECK(f.tensor(f.ops.back().x).dtype == GraphDType::bf16);
}

TEST_CASE("cudnn graphs compute scaled_dot attention and its gradients on the cpu") {
  SUBCASE("no mask and d_k != d_v") { check_case({problem(2, 2, 4, 5, 8, 16)}, 10); }
  SUBCASE("key padding") { check_case({problem(2, 2, 4, 5, 8, 16), false, {5, 3}}, 20); }
  SUBCASE("causal") { check_case({problem(2, 2, 5, 5, 8, 8), true}, 30); }
  SUBCASE("causal with key padding and queries in bshd layout") {
    check_case({problem(2, 3, 6, 6, 16, 8, HeadLayout::bshd), true, {6, 4}}, 40);
  }
  SUBCASE("one causal query step against a padded cache") {
    check_case({problem(2, 2, 1, 5, 8, 16, HeadLayout::bshd), true, {5, 2}}, 50);
  }
  SUBCASE("causal with fewer queries than keys") { check_case({problem(2, 2, 3, 7, 8, 16), true}, 70); }
  SUBCASE("causal with fewer queries than keys and key padding in bshd layout") {
    Case c{problem(3, 2, 4, 9, 16, 8, HeadLayout::bshd), true, {9, 6, 2}};
    c.p.kv_layout = HeadLayout::bshd;
    check_case(c, 80);
  }
  SUBCASE("cross attention with one real key and keys in bshd layout") {
    Case c{problem(2, 2, 3, 7, 16, 8), false, {7, 1}};
    c.p.kv_layout = HeadLayout::bshd;
    check_case(c, 60);
  }
}

TEST_CASE("cudnn problems outside the graphs are refused clearly") {
  SdpaProblem p = problem(1, 1, 4, 4, 12, 8);
  CHECK_THROWS_WITH_AS(sdpa_forward_graph(p), doctest::Contains("head size 12 is not supported"), Error);
  p.d_qk = 136;
  CHECK_THROWS_WITH_AS(sdpa_backward_graph(p), doctest::Contains("multiples of 8 up to 128"), Error);
  p = problem(1, 1, 5, 3, 8, 8);
  p.causal = true;
  CHECK_THROWS_WITH_AS(sdpa_forward_graph(p), doctest::Contains("causal attention with 5 queries over 3 keys"), Error);
  CHECK_THROWS_WITH_AS(sdpa_backward_graph(p), doctest::Contains("the first 2 queries would see no key"), Error);
}

TEST_CASE("cudnn causal graphs align the diagonal bottom-right when there are fewer queries than keys") {
  SdpaProblem p = problem(1, 1, 4, 4, 8, 8);
  p.causal = true;
  // Equal lengths: the top-left mask, without the offset scalars.
  CHECK_FALSE(sdpa_forward_graph(p).has(uid::causal_s_kv));
  CHECK_FALSE(sdpa_backward_graph(p).has(uid::causal_s_q));
  p.s_kv = 6;
  for (const SdpaGraph& g : {sdpa_forward_graph(p), sdpa_backward_graph(p)}) {
    REQUIRE(g.has(uid::causal_s_kv));
    REQUIRE(g.has(uid::causal_s_q));
    for (std::int64_t id : {uid::causal_s_kv, uid::causal_s_q}) {
      CHECK(g.tensor(id).by_value);
      CHECK(g.tensor(id).dtype == GraphDType::i32);
    }
    // row + s_kv - s_q in i32, compared with the column
    int offsets = 0;
    for (const auto& op : g.ops)
      if (op.b == uid::causal_s_kv || op.b == uid::causal_s_q) {
        ++offsets;
        CHECK(op.compute == GraphDType::i32);
        CHECK(g.tensor(op.y).dtype == GraphDType::i32);
      }
    CHECK(offsets == 2);
  }
  // The mask the graph applies, read off the forward's weights: query i sees keys j <= i + 2.
  Buffers buf;
  const std::int64_t sq = 4, skv = 6;
  buf[uid::q].assign(static_cast<std::size_t>(sq * 8), 0.0);  // all scores 0: uniform weights over the visible keys
  buf[uid::k].assign(static_cast<std::size_t>(skv * 8), 0.0);
  std::vector<double> v(static_cast<std::size_t>(skv * 8), 0.0);
  for (std::int64_t j = 0; j < skv; ++j) v[static_cast<std::size_t>(j * 8)] = static_cast<double>(j);  // V[j, 0] = j
  buf[uid::v] = v;
  buf[uid::o].assign(static_cast<std::size_t>(sq * 8), 0.0);
  buf[uid::stats].assign(static_cast<std::size_t>(sq), 0.0);
  buf[uid::scale] = {1.0};
  buf[uid::mask_fill] = {static_cast<double>(std::numeric_limits<float>::lowest())};
  buf[uid::causal_s_kv] = {static_cast<double>(skv)};
  buf[uid::causal_s_q] = {static_cast<double>(sq)};
  graph_testing::run_graph(sdpa_forward_graph(p), buf);
  for (std::int64_t i = 0; i < sq; ++i) {
    const std::int64_t seen = i + skv - sq + 1;  // keys 0 .. i + 2
    CHECK(buf[uid::o][static_cast<std::size_t>(i * 8)] == doctest::Approx(static_cast<double>(seen - 1) / 2.0));
    CHECK(buf[uid::stats][static_cast<std::size_t>(i)] == doctest::Approx(std::log(static_cast<double>(seen))));
  }
}

TEST_CASE("cudnn key lengths come from a suffix padding mask") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> mask{0, 0, 0, -inf, 0, -inf, -inf, -inf, 0, 0, 0, 0};
  const KeyLengths good = key_lengths_reference(mask, 3, 4);
  CHECK(good.lengths == std::vector<std::int32_t>{3, 1, 4});
  CHECK(good.problems == std::vector<std::uint64_t>(3, kNoMaskProblem));
  CHECK(good.first_problem() == kNoMaskProblem);
}

TEST_CASE("cudnn key lengths name the first row that breaks the suffix rule") {
  const float inf = std::numeric_limits<float>::infinity();
  // row 0: fine; row 1: a hole at key 1; row 2: -1e9 at key 2; row 3: no real key; row 4: a hole at 0
  const std::vector<float> mask{0, 0, 0, -inf,   0,    -inf, 0, 0,     0,    0,    -1e9f, -inf,
                                -inf, -inf, -inf, -inf, -inf, -inf, 0, -inf};
  const KeyLengths k = key_lengths_reference(mask, 5, 4);
  // the lengths cuDNN gets reach each row's last real key, at least 1
  CHECK(k.lengths == std::vector<std::int32_t>{3, 4, 3, 1, 3});
  CHECK(k.problems[0] == kNoMaskProblem);
  CHECK(k.problems[1] == mask_problem_code(1, 1, MaskProblem::padding_before_key));
  CHECK(k.problems[2] == mask_problem_code(2, 2, MaskProblem::bad_value));
  CHECK(k.problems[3] == mask_problem_code(3, 0, MaskProblem::no_key));
  CHECK(k.problems[4] == mask_problem_code(4, 0, MaskProblem::padding_before_key));
  CHECK(k.first_problem() == k.problems[1]);
  CHECK(describe_mask_problem(k.problems[1]) == "key padding mask row 1 has padding (-inf) at key 1 before a real key");
  CHECK(describe_mask_problem(k.problems[2]) == "key padding mask row 2 holds a value other than 0 and -inf at key 2");
  CHECK(describe_mask_problem(k.problems[3]) == "key padding mask row 3 masks every key");
  // a NaN counts as a real key with a bad value
  const std::vector<float> nan{0, std::numeric_limits<float>::quiet_NaN(), -inf};
  CHECK(key_lengths_reference(nan, 1, 3).first_problem() == mask_problem_code(0, 1, MaskProblem::bad_value));
  CHECK_THROWS_WITH_AS(key_lengths_reference(mask, 5, 5), doctest::Contains("has 20 values for [5, 5]"), Error);
}

TEST_CASE("cudnn mask problem codes keep the row and the key and order by them") {
  const std::uint64_t a = mask_problem_code(123456, 4000000000LL, MaskProblem::no_key);
  CHECK(mask_problem_row(a) == 123456);
  CHECK(mask_problem_key(a) == 4000000000LL);
  CHECK(mask_problem_kind(a) == MaskProblem::no_key);
  CHECK(mask_problem_code(1, 0, MaskProblem::no_key) < mask_problem_code(1, 1, MaskProblem::padding_before_key));
  CHECK(mask_problem_code(0, 9, MaskProblem::no_key) < mask_problem_code(1, 0, MaskProblem::padding_before_key));
  CHECK(mask_problem_code((1LL << 30) - 1, (1LL << 32) - 1, MaskProblem::no_key) < kNoMaskProblem);
}

TEST_CASE("cudnn causal calls map to a mask or to none") {
  CHECK_FALSE(causal_mask_needed(false, 4, 7));
  CHECK(causal_mask_needed(true, 4, 4));
  CHECK(causal_mask_needed(true, 2, 9));        // bottom-right
  CHECK_FALSE(causal_mask_needed(true, 1, 9));  // a decoding step sees every cached key
  CHECK_FALSE(causal_mask_needed(true, 1, 1));
  CHECK_THROWS_WITH_AS(causal_mask_needed(true, 9, 2), doctest::Contains("9 queries over 2 keys"), Error);
}

TEST_CASE("cudnn refuses a bottom-right causal mask in a call with key padding") {
  CHECK_NOTHROW(check_causal_padding(true, false, 3, 7));  // no padding
  CHECK_NOTHROW(check_causal_padding(true, true, 7, 7));   // top-left, as in decoder self-attention
  CHECK_NOTHROW(check_causal_padding(false, true, 3, 7));  // a decoding step (no mask) or cross-attention
  CHECK_THROWS_WITH_AS(check_causal_padding(true, true, 13, 29),
                       doctest::Contains("causal queries over a longer padded key sequence (13 queries over 29 keys "
                                         "with a key padding mask) are not supported"),
                       Error);
}

TEST_CASE("cudnn bottom-right causal masks need cudnn 9.6 for lengths that are not multiples of 64") {
  CHECK_NOTHROW(check_causal_alignment(true, 3, 7, 90600));
  CHECK_NOTHROW(check_causal_alignment(true, 7, 7, 90000));    // top-left: every cuDNN 9
  CHECK_NOTHROW(check_causal_alignment(false, 3, 7, 90000));   // no mask
  CHECK_NOTHROW(check_causal_alignment(true, 64, 128, 90501));
  CHECK_THROWS_WITH_AS(check_causal_alignment(true, 3, 7, 90501),
                       doctest::Contains("cuDNN 90501 serves only for lengths that are multiples of 64"), Error);
}
