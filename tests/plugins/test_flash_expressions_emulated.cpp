// The device code generated for score expressions (attnlab/expr/score_kernels.h:
// cuda_expressions_source) inside flash's FMA, tensor-core and Hopper kernels, run on the host
// (the shared objects of flash_expr_objects.h): the forward, delta, dq and dk/dv kernels (FMA in
// f32 and bf16, tensor cores and Hopper in bf16 at head size 64), in every order of a block's
// threads, against flash's CPU path in f64 with the same expressions: the output, the logsumexp and
// every gradient (the learned tensors' fixed-point accumulators included). Tiles are cut by the
// sequence ends, keys padded, queries of cross-attention offset, and mask_mod removes whole tiles
// and keeps others.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/expr/kernel_cache.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/expr/score_kernels.h"
#include "attnlab/testing/expression_variants.h"
#include "flash_attention.h"
#include "flash_expr_objects.h"
#include "support/flash_expr_emulation.h"
#include "support/tensor_testing.h"
// After every other header: the emulation defines CUDA's keywords as macros (here for the order
// of a block's threads, which the shared object's own emulation takes from the arguments).
#include "support/cuda_host_emulation.h"
#include "support/emulation_orders.h"

using namespace attnlab;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

using Variant = testing::ExpressionVariant;
using testing::head_tensor;

using flash_expr_objects::build;
using flash_expr_objects::variants;

using Entry = void (*)(const ExprEmulationArgs*);

// The kernel families the generated code runs in.
enum class Family { fma, tensor_cores, hopper };

// bf16 storage of x (round to nearest even), and its value.
std::uint16_t bf16_bits(double x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(static_cast<float>(x));
  if ((u & 0x7f800000u) == 0x7f800000u) return static_cast<std::uint16_t>(u >> 16);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
double bf16_value(std::uint16_t b) { return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16)); }

// Values as the kernels store them (float, or bf16 bits), and the f64 tensor of exactly those.
struct Stored {
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  Tensor reference;
  const void* data(bool b) const { return b ? static_cast<const void*>(bf16.data()) : f32.data(); }
};
Stored store(const Tensor& x, bool bf16) {
  Stored s;
  std::vector<double> back;
  for (double v : x.to_vector<double>()) {
    if (bf16) {
      s.bf16.push_back(bf16_bits(v));
      back.push_back(bf16_value(s.bf16.back()));
    } else {
      s.f32.push_back(static_cast<float>(v));
      back.push_back(static_cast<double>(s.f32.back()));
    }
  }
  s.reference = Tensor::from_vector<double>(x.shape(), back);
  return s;
}

// The kernels' output (float or bf16) as doubles.
std::vector<double> doubles(const std::vector<float>& f, const std::vector<std::uint16_t>& b, bool bf16) {
  std::vector<double> out;
  if (bf16)
    for (auto x : b) out.push_back(bf16_value(x));
  else
    for (auto x : f) out.push_back(static_cast<double>(x));
  return out;
}

void check_close(const std::vector<double>& got, const Tensor& want, double tol, const std::string& what) {
  const auto w = want.to_vector<double>();
  REQUIRE(got.size() == w.size());
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(w[i]) || std::isinf(got[i])) {
      CHECK_MESSAGE(got[i] == w[i], what, " element ", i, ": ", got[i], " vs ", w[i]);
      continue;
    }
    const double e = std::abs(got[i] - w[i]) / (1.0 + std::abs(w[i]));
    if (!(e <= worst)) worst = e, at = i;
  }
  CHECK_MESSAGE(worst <= tol, what, ": worst element ", at, " got ", got[at], " want ", w[at], " (", worst, ")");
}

struct Case {
  int b, h, tq, tk;
  bool causal, mask;
  int q_offset;  // of the expressions' queries (cross-attention: not tk - tq)
};

// The entry point of variant v in `family` (f32 or bf16 on the FMA kernels; bf16 on the others).
Entry entry(std::size_t v, Family family, bool bf16) {
  if (family == Family::hopper) return reinterpret_cast<Entry>(flash_expr_objects::hopper_entries()[v]);
  return reinterpret_cast<Entry>(
      flash_expr_objects::entries()[3 * v + (family == Family::tensor_cores ? 2 : bf16 ? 1 : 0)]);
}

// Variant v on the FMA kernels (f32 or bf16), or on the tensor-core or Hopper ones (bf16).
void run_case(std::size_t v, const Case& s, bool bf16, Family family = Family::fma) {
  const Variant var = variants()[v];
  const bool mma = family != Family::fma;
  INFO(fmt::format("{}{} {} B {} Tq {} Tk {} causal {} mask {} q_offset {}", var.name,
                   family == Family::tensor_cores ? " tensor cores" : family == Family::hopper ? " Hopper" : "",
                   bf16 ? "bf16" : "f32", s.b, s.tq, s.tk, s.causal, s.mask, s.q_offset));
  REQUIRE((bf16 || !mma));
  const auto e = build(var);
  const int dk = mma ? kTcHead : kEmulatedDk, dv = mma ? kTcHead : kEmulatedDv;
  const Stored q = store(testing::random_tensor({s.b, s.h, s.tq, dk}, 11, -1.5, 1.5, DType::f64), bf16);
  const Stored k = store(testing::random_tensor({s.b, s.h, s.tk, dk}, 12, -1.5, 1.5, DType::f64), bf16);
  const Stored val = store(testing::random_tensor({s.b, s.h, s.tk, dv}, 13, -1.0, 1.0, DType::f64), bf16);
  const Stored dout = store(testing::random_tensor({s.b, s.h, s.tq, dv}, 14, -1.0, 1.0, DType::f64), bf16);
  // Batch row 0 sees its first tk - 7 keys.
  std::vector<double> m(static_cast<std::size_t>(s.b * s.tk), 0.0);
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(s.b), s.tk);
  if (s.mask) {
    lengths[0] = s.tk - 7;
    for (int j = s.tk - 7; j < s.tk; ++j) m[static_cast<std::size_t>(j)] = -std::numeric_limits<double>::infinity();
  }
  const Stored mask = store(Tensor::from_vector<double>({s.b, s.tk}, m), bf16);

  // The reference: flash's CPU path in f64 with the same expressions.
  Generator init(5);
  expr::ScoreExprCall call;
  call.expr = e;
  call.q_offset = s.q_offset;
  std::vector<std::int64_t> q_len(static_cast<std::size_t>(s.b), s.q_offset + s.tq), kv_len(lengths.begin(), lengths.end());
  call.q_lengths = Tensor::from_vector<std::int32_t>({s.b}, std::vector<std::int32_t>(q_len.begin(), q_len.end()));
  call.kv_lengths = Tensor::from_vector<std::int32_t>({s.b}, lengths);
  for (const auto& spec : e->tensors()) {
    Tensor t = expr::initial_tensor(spec, init, DType::f64, Device::cpu());
    if (spec.learned) t.set_requires_grad();
    call.tensors.push_back(t);
  }
  Tensor q64 = q.reference.detach().set_requires_grad(), k64 = k.reference.detach().set_requires_grad(),
         v64 = val.reference.detach().set_requires_grad();
  flash::FlashOptions o;
  o.causal = s.causal;
  o.scale = 1.0 / std::sqrt(static_cast<double>(dk));
  if (s.mask) o.key_padding_mask = mask.reference;
  o.expressions = std::make_shared<expr::ScoreExprCall>(call);
  const flash::FlashForward ref = flash::flash_attention_forward(q64, k64, v64, o);
  ref.out.backward(dout.reference);

  // The emulated kernels.
  const std::size_t nq = q.reference.numel(), nk = k.reference.numel(), nv = val.reference.numel();
  const std::size_t nout = static_cast<std::size_t>(s.b * s.h * s.tq * dv), rows = static_cast<std::size_t>(s.b * s.h * s.tq);
  std::vector<float> out(nout), dq(nq), dkk(nk), dvv(nv), lse(rows), delta(rows);
  std::vector<std::uint16_t> out_b(nout), dq_b(nq), dk_b(nk), dv_b(nv);
  std::vector<std::vector<float>> tensors;
  std::vector<std::vector<unsigned long long>> grads;
  for (const Tensor& t : call.tensors) {
    const auto d = t.to_vector<double>();
    tensors.emplace_back(d.begin(), d.end());
    grads.emplace_back(d.size(), 0ull);
  }
  std::vector<int> q_len_i(q_len.begin(), q_len.end()), kv_len_i(kv_len.begin(), kv_len.end());
  const expr::TileMap map = expr::tile_map(*e, s.b, s.h, s.tq, s.tk, s.q_offset, q_len, kv_len, 32, 32);
  ExprEmulationArgs a{};
  a.batch = s.b;
  a.heads = s.h;
  a.tq = s.tq;
  a.tk = s.tk;
  a.causal = s.causal;
  a.bf16 = bf16;
  a.tensor_cores = family == Family::tensor_cores;
  a.scale = static_cast<float>(o.scale);
  a.q = q.data(bf16);
  a.k = k.data(bf16);
  a.v = val.data(bf16);
  a.dout = dout.data(bf16);
  a.mask = s.mask ? mask.data(bf16) : nullptr;
  a.lengths = s.mask ? lengths.data() : nullptr;
  a.out = bf16 ? static_cast<void*>(out_b.data()) : out.data();
  a.lse = lse.data();
  a.delta = delta.data();
  a.dq = bf16 ? static_cast<void*>(dq_b.data()) : dq.data();
  a.dk = bf16 ? static_cast<void*>(dk_b.data()) : dkk.data();
  a.dv = bf16 ? static_cast<void*>(dv_b.data()) : dvv.data();
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    a.expr.tensors[t] = tensors[t].data();
    a.expr.grads[t] = e->tensors()[t].learned ? grads[t].data() : nullptr;
  }
  a.expr.q_len = q_len_i.data();
  a.expr.kv_len = kv_len_i.data();
  a.expr.q_offset = s.q_offset;
  if (!map.classes.empty()) {
    a.expr.tiles = map.classes.data();
    a.expr.tile_rows = a.expr.tile_cols = 32;
    a.expr.tiles_q = static_cast<int>(map.tiles_q);
    a.expr.tiles_k = static_cast<int>(map.tiles_k);
    a.expr.by_b = map.by_b;
    a.expr.by_h = map.by_h;
    a.expr.heads = s.h;
  }
  // In every order of a block's threads, from zeroed gradients (the fixed-point ones accumulate).
  const auto [got_out, got_out_b, got_lse, got_dq, got_dq_b, got_dk, got_dk_b, got_dv, got_dv_b, got_grads] =
      cuda_host_emulation::in_every_thread_order([&] {
        for (auto& g : grads) std::fill(g.begin(), g.end(), 0ull);
        a.order = static_cast<int>(cuda_host_emulation::order_setting.order);
        a.seed = cuda_host_emulation::order_setting.seed;
        entry(v, family, bf16)(&a);
        return std::tuple(out, out_b, lse, dq, dq_b, dkk, dk_b, dvv, dv_b, grads);
      });
  out = got_out, out_b = got_out_b, lse = got_lse, dq = got_dq, dq_b = got_dq_b;
  dkk = got_dk, dk_b = got_dk_b, dvv = got_dv, dv_b = got_dv_b, grads = got_grads;

  // The MMA kernels round P and dS to bf16 before their products (as FlashAttention-2).
  const double out_tol = mma ? 1.5e-2 : bf16 ? 1e-2 : 2e-5, grad_tol = bf16 ? 3e-2 : 2e-4;
  check_close(doubles(out, out_b, bf16), ref.out, out_tol, "out");
  check_close(std::vector<double>(lse.begin(), lse.end()), ref.logsumexp, 1e-5, "lse");
  check_close(doubles(dq, dq_b, bf16), q64.grad(), grad_tol, "dq");
  check_close(doubles(dkk, dk_b, bf16), k64.grad(), grad_tol, "dk");
  check_close(doubles(dvv, dv_b, bf16), v64.grad(), grad_tol, "dv");
  for (std::size_t t = 0; t < grads.size(); ++t) {
    if (!e->tensors()[t].learned) continue;
    std::vector<double> g;
    for (unsigned long long x : grads[t]) g.push_back(static_cast<double>(static_cast<long long>(x)) / expr::kFixedPointScale);
    check_close(g, call.tensors[t].grad(), bf16 ? 5e-2 : 5e-4, "d " + e->tensors()[t].name);
  }
}

}  // namespace

TEST_CASE("generated device code of score expressions in the emulated FMA kernels equals the CPU path") {
  if (kSanitized) {
    MESSAGE("skipped under AddressSanitizer: the emulated kernels run in a shared object compiled without it");
    return;
  }
  const Case shapes[] = {
      {2, 2, 45, 45, false, true, 0},   // self-attention with padding: two tiles each way, cut
      {2, 2, 45, 45, true, false, 0},   // causal
      {2, 2, 20, 70, false, true, 7},   // cross-attention: queries at 7 .. 26
  };
  for (std::size_t v = 0; v < variants().size(); ++v)
    for (const Case& s : shapes)
      for (bool bf16 : {false, true}) run_case(v, s, bf16);
}

TEST_CASE("generated device code of score expressions in the emulated tensor-core kernels equals the CPU path") {
  if (kSanitized) {
    MESSAGE("skipped under AddressSanitizer: the emulated kernels run in a shared object compiled without it");
    return;
  }
  // Tiles of 64: the window and the lengths' mask remove some, keep others and mix the rest (the
  // kernels combine the four 32 x 32 classes under each).
  const Case shapes[] = {
      {1, 2, 120, 120, true, true, 0},   // causal self-attention with padding: two tiles each way, cut
      {2, 2, 40, 110, false, true, 7},   // cross-attention: queries at 7 .. 46 (the window removes keys 64 ..)
  };
  for (std::size_t v = 0; v < variants().size(); ++v)
    for (const Case& s : shapes) run_case(v, s, true, Family::tensor_cores);
}

TEST_CASE("generated device code of score expressions in the emulated Hopper kernels equals the CPU path") {
  if (!flash_expr_objects::hopper_built()) {
    MESSAGE("skipped: this build has no Hopper kernels (no CUTLASS)");
    return;
  }
  if (kSanitized) {
    MESSAGE("skipped under AddressSanitizer: the emulated kernels run in a shared object compiled without it");
    return;
  }
  // The forward's tiles are 128 x 128, the backward's 128 rows by 64 walked: the window removes
  // whole tiles (those the pipeline then skips), keeps others and mixes the rest.
  const Case shapes[] = {
      {1, 2, 300, 300, true, true, 0},  // causal self-attention with padding: three tiles each way, cut
      {1, 2, 40, 300, false, true, 7},  // cross-attention: queries at 7 .. 46 (the window removes keys 64 ..)
  };
  for (std::size_t v = 0; v < variants().size(); ++v)
    for (const Case& s : shapes) run_case(v, s, true, Family::hopper);
}

TEST_CASE("the window's tile map removes, keeps and mixes tiles, and the kernels follow it") {
  const auto e = build(variants()[3]);  // kv_idx == 0 || abs(q_idx - kv_idx) <= 9
  const std::vector<std::int64_t> len(1, 128);
  const expr::TileMap map = expr::tile_map(*e, 1, 2, 128, 128, 0, len, len, 32, 32);
  CHECK_FALSE(map.by_b);
  CHECK_FALSE(map.by_h);
  REQUIRE(map.classes.size() == 16);
  // Diagonal tiles and the first key tile (the sink) are mixed; tiles two apart are removed.
  CHECK(map.classes[1 * 4 + 1] == expr::kTileMixed);
  CHECK(map.classes[3 * 4 + 0] == expr::kTileMixed);
  CHECK(map.classes[3 * 4 + 1] == expr::kTileRemoved);
  const auto lengths = build(variants()[6]);  // reads q_len: a map per batch row
  const std::vector<std::int64_t> ql = {40, 90};
  const expr::TileMap by_row = expr::tile_map(*lengths, 2, 2, 96, 96, 0, ql, ql, 32, 32);
  CHECK(by_row.by_b);
  // Layout [b][q tile][k tile] (3 x 3 tiles of 32): row 0 keeps queries below 38, row 1 below 88.
  CHECK(by_row.classes[(0 * 3 + 2) * 3 + 0] == expr::kTileRemoved);  // row 0, queries 64 .. 95
  CHECK(by_row.classes[(0 * 3 + 1) * 3 + 0] == expr::kTileMixed);    // row 0, queries 32 .. 63
  CHECK(by_row.classes[(1 * 3 + 1) * 3 + 0] == expr::kTileKept);     // row 1, queries 32 .. 63
  CHECK(by_row.classes[(1 * 3 + 2) * 3 + 0] == expr::kTileMixed);    // row 1, queries 64 .. 95
}
