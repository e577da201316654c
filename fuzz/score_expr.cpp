// Fuzzes score expressions: the input's first line is score_mod, the second mask_mod (either may be
// empty), over the variables and two tensors (bias [4, 17], learned; slope [4]). An expression the
// front end accepts must then run: the dense op forward and backward over every position below the
// limits it was proven for (a read outside a tensor or undefined integer arithmetic is a sanitizer
// finding), and the classes that interval arithmetic gives tiles must hold for every pair in them:
// a tile called removed has no kept pair, a tile called kept no removed one.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "attnlab/attnlab.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/expr/score_kernels.h"
#include "attnlab/ops/score_expr.h"
#include "fuzz_input.h"

namespace {

using namespace attnlab;

constexpr std::int64_t kHeads = 4, kMaxLength = 40;

std::vector<expr::TensorSpec> tensors() {
  expr::TensorSpec bias, slope;
  bias.name = "bias";
  bias.shape = {kHeads, 17};
  bias.per_head = {true, false};
  bias.learned = true;
  slope.name = "slope";
  slope.shape = {kHeads};
  slope.per_head = {true};
  slope.init = expr::TensorInit::alibi_slopes;
  return {bias, slope};
}

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fuzz::as_text(data, size));
  const std::size_t nl = text.find('\n');
  expr::SiteExprs site;
  site.score_mod.text = text.substr(0, nl);
  if (nl != std::string::npos) site.mask_mod.text = text.substr(nl + 1);
  std::shared_ptr<const expr::ScoreExpr> e;
  fuzz::expect_errors([&] { e = expr::ScoreExpr::build(site, tensors(), {kHeads, kMaxLength}); });
  if (!e) return 0;
  // Every query and key position below the limits: 2 batch rows, queries 0 .. 39 in two calls.
  const std::int64_t b = 2, tk = kMaxLength;
  Generator init(3);
  expr::ScoreExprCall call{e, {}, 0, Tensor::from_vector<std::int32_t>({b}, {40, 7}),
                           Tensor::from_vector<std::int32_t>({b}, {40, 0})};
  for (const auto& spec : e->tensors()) {
    Tensor t = expr::initial_tensor(spec, init, DType::f64, Device::cpu());
    if (spec.learned) t.set_requires_grad();
    call.tensors.push_back(t);
  }
  for (std::int64_t q_offset : {std::int64_t{0}, std::int64_t{20}}) {
    call.q_offset = q_offset;
    const std::int64_t tq = kMaxLength - q_offset;
    Tensor scores = Tensor::zeros({b, kHeads, tq, tk}, DType::f64).set_requires_grad();
    Tensor out;
    fuzz::expect_errors([&] {
      out = apply_score_expr(scores, call);
      out.backward(Tensor::full(out.shape(), 0.5, DType::f64));
    });
    if (!out.defined() || !e->has_mask_mod()) continue;
    // The mask alone, and the tile classes against it.
    expr::SiteExprs mask_only;
    mask_only.mask_mod = site.mask_mod;
    const auto m = expr::ScoreExpr::build(mask_only, tensors(), {kHeads, kMaxLength});
    expr::ScoreExprCall mc = call;
    mc.expr = m;
    mc.tensors.clear();
    for (const auto& spec : m->tensors()) mc.tensors.push_back(expr::initial_tensor(spec, init, DType::f64, Device::cpu()));
    const auto kept = apply_score_expr(Tensor::zeros({b, kHeads, tq, tk}, DType::f64), mc).to_vector<double>();
    const std::vector<std::int64_t> q_len = {40, 7}, kv_len = {40, 0};
    for (std::int64_t bi = 0; bi < b; ++bi)
      for (std::int64_t h = 0; h < kHeads; ++h)
        for (std::int64_t i0 = 0; i0 < tq; i0 += 8)
          for (std::int64_t j0 = 0; j0 < tk; j0 += 8) {
            const std::int64_t i1 = std::min(i0 + 8, tq), j1 = std::min(j0 + 8, tk);
            const expr::TileMask cls = expr::classify_tile(
                *m, {bi, h, q_offset + i0, q_offset + i1, j0, j1, q_len[static_cast<std::size_t>(bi)],
                     kv_len[static_cast<std::size_t>(bi)]});
            for (std::int64_t i = i0; i < i1; ++i)
              for (std::int64_t j = j0; j < j1; ++j) {
                const bool keep = !std::isinf(kept[static_cast<std::size_t>(((bi * kHeads + h) * tq + i) * tk + j)]);
                if ((cls == expr::TileMask::removed && keep) || (cls == expr::TileMask::kept && !keep))
                  finding("tile class " + std::to_string(static_cast<int>(cls)) + " wrong at b " + std::to_string(bi) +
                          " h " + std::to_string(h) + " q_idx " + std::to_string(q_offset + i) + " kv_idx " +
                          std::to_string(j) + " for mask_mod: " + site.mask_mod.text);
              }
          }
  }
  return 0;
}
