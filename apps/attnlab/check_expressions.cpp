// attnlab check's section on score expressions: for each distinct set of expressions among the
// suite's rows, each site's score_mod and mask_mod, the tensors they read, and whether their
// compiled CPU kernels are in the kernel cache already (or will be compiled at the first call).
#include "check_expressions.h"

#include <algorithm>
#include <map>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/expr/score_kernels.h"

namespace attnlab::app {
namespace {

std::string tensor_line(const expr::TensorSpec& t, std::int64_t layers) {
  std::string init(expr::kTensorInits.name(t.init));
  if (t.init == expr::TensorInit::normal) init += fmt::format(" (std {})", t.std);
  return fmt::format("  tensor {}: {}, {}, {}", t.name, t.shape_text(), init,
                     t.learned ? fmt::format("learned (a parameter of each attention layer that reads it: {} values "
                                             "in all)",
                                             t.numel() * layers)
                               : "constant");
}

}  // namespace

void print_expressions(const nmt::Suite& suite, std::FILE* out) {
  // Rows by the text of their expressions, in first-seen order.
  std::vector<std::pair<std::string, std::vector<const nmt::SuiteRow*>>> groups;
  for (const auto& row : suite.rows) {
    const nmt::AttentionExpressions& e = row.config.model.expressions;
    if (!e.any() || !row.skipped.empty()) continue;
    std::string key;
    for (nmt::AttentionSite s : nmt::kAttentionSites)
      key += e.site(s).score_mod.text + "\n" + e.site(s).mask_mod.text + "\n";
    for (const auto& t : e.tensors) key += t.name + t.shape_text() + "\n";
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) groups.push_back({key, {&row}});
    else it->second.push_back(&row);
  }
  if (groups.empty()) return;
  fmt::print(out, "\nscore expressions (kernel cache {}):\n", expr::kernel_cache_folder());
  for (const auto& [key, rows] : groups) {
    const nmt::TransformerConfig& m = rows.front()->config.model;
    std::vector<std::string> names;
    for (const auto* r : rows) names.push_back(r->name);
    fmt::print(out, "rows {}:\n", fmt::join(names, ", "));
    // Sites with the same expressions on one line.
    std::vector<std::pair<std::string, std::vector<std::string>>> sites;
    for (nmt::AttentionSite s : nmt::kAttentionSites) {
      const expr::SiteExprs& e = m.expressions.site(s);
      const std::string text = fmt::format("score_mod = {}\n{:>{}}mask_mod  = {}", e.score_mod.empty() ? "(none)" : e.score_mod.text,
                                           "", 0, e.mask_mod.empty() ? "(none)" : e.mask_mod.text);
      auto it = std::find_if(sites.begin(), sites.end(), [&](const auto& x) { return x.first == text; });
      if (it == sites.end()) sites.push_back({text, {nmt::attention_site_name(s)}});
      else it->second.push_back(nmt::attention_site_name(s));
    }
    for (const auto& [text, which] : sites) {
      const std::string label = fmt::format("  {}: ", fmt::join(which, ", "));
      const std::size_t nl = text.find('\n');
      fmt::print(out, "{}{}\n{:>{}}{}\n", label, text.substr(0, nl), "", label.size(), text.substr(nl + 1));
    }
    std::map<std::string, std::int64_t> layers;
    for (nmt::AttentionSite s : nmt::kAttentionSites) {
      const auto built = nmt::site_expressions(m, s);
      if (!built) continue;
      for (const auto& t : built->tensors())
        layers[t.name] += s == nmt::AttentionSite::encoder ? m.encoder_layers : m.decoder_layers;
    }
    for (const auto& t : m.expressions.tensors) fmt::print(out, "{}\n", tensor_line(t, layers[t.name]));
    for (nmt::AttentionSite s : nmt::kAttentionSites) {
      const auto built = nmt::site_expressions(m, s);
      if (!built) continue;
      fmt::print(out, "  {} CPU kernels: {}\n", nmt::attention_site_name(s),
                 expr::cpu_kernels_cached(*built) ? "compiled (in the cache)"
                                                  : "not compiled yet (compiled at the first call, then cached)");
    }
  }
}

}  // namespace attnlab::app
