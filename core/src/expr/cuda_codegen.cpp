// A site's expressions as CUDA C++ (score_kernels.h): the struct that flash's kernels take as their
// Expressions parameter, with the members of expr::NoExpressions (device_abi.h), each running the
// program's statements (codegen.h) for one score.
#include <fmt/format.h>

#include "attnlab/expr/score_kernels.h"
#include "expr/codegen.h"
#include "expr/ir.h"

namespace attnlab::expr {
namespace {

// The statements' helpers live in a namespace of the struct's name, so that one source may hold
// the structs of several sites.
std::string body_head(const ScoreExpr& e, const std::string& name) {
  std::string out = fmt::format("    using namespace {}_helpers;\n    const int q_len = a.q_len[b], kv_len = a.kv_len[b];\n", name);
  for (std::size_t t = 0; t < e.tensors().size(); ++t) out += fmt::format("    const float* const t{0} = a.tensors[{0}];\n", t);
  return out;
}

}  // namespace

std::string cuda_expressions_source(const ScoreExpr& e, const std::string& name) {
  ATTNLAB_CHECK(static_cast<int>(e.tensors().size()) <= kMaxDeviceTensors,
                "score expressions: a site reads {} tensors; the CUDA kernels take at most {}", e.tensors().size(),
                kMaxDeviceTensors);
  const Program& p = e.program();
  const Dialect d{true, "float"};
  auto statements = [&](const std::vector<int>& roots) {
    std::vector<bool> done(p.nodes.size(), false);
    return emit_nodes(p, p.live(roots), done, e.tensors(), d, "    ");
  };
  const std::string args = "const ::attnlab::expr::DeviceArgs& a, int b, int h, int q_idx, int kv_idx";
  std::string out = "// score_mod = " + (e.has_score_mod() ? e.source().score_mod.text : std::string("(none)")) +
                    "\n// mask_mod  = " + (e.has_mask_mod() ? e.source().mask_mod.text : std::string("(none)")) + "\n";
  out += fmt::format("struct {} {{\n  static constexpr bool kAny = true, kScore = {}, kMask = {}, kLearns = {};\n", name,
                     e.has_score_mod(), e.has_mask_mod(), e.learns());
  out += fmt::format("  static __device__ __forceinline__ float score(float score, {}) {{\n", args);
  if (p.score >= 0) out += body_head(e, name) + statements({p.score}) + fmt::format("    return {};\n", value_of(p, p.score, d));
  else out += "    return score;\n";
  out += "  }\n";
  out += fmt::format("  static __device__ __forceinline__ bool keep({}) {{\n", args);
  if (p.mask >= 0) out += body_head(e, name) + statements({p.mask}) + fmt::format("    return {} != 0;\n", value_of(p, p.mask, d));
  else out += "    return true;\n";
  out += "  }\n";
  // d loss / d raw score from g = d loss / d score_mod's result; with `learn`, g times the
  // derivative with respect to each learned element read added to its fixed-point accumulator.
  out += fmt::format("  static __device__ __forceinline__ float grad(float score, float g, {}, bool learn) {{\n", args);
  out += "    if (g == 0.0f) return 0.0f;\n";
  if (p.score >= 0) {
    std::vector<int> roots = {p.d_score};
    for (const auto& l : p.d_loads) roots.push_back(l.grad), roots.push_back(l.load);
    out += body_head(e, name) + statements(roots);
    for (const auto& l : p.d_loads) {
      const int t = p.nodes[static_cast<std::size_t>(l.load)].tensor;
      out += fmt::format("    if (learn && a.grads[{0}]) atomicAdd(a.grads[{0}] + {1}, ::attnlab::expr::to_fixed_point(g * {2}));\n",
                         t, offset_of(l.load), value_of(p, l.grad, d));
    }
    out += fmt::format("    return g * {};\n", value_of(p, p.d_score, d));
  } else {
    out += "    return g;\n";
  }
  out += "  }\n};\n";
  return fmt::format("namespace {}_helpers {{\n{}}}\n", name, helpers(d)) + out;
}

}  // namespace attnlab::expr
