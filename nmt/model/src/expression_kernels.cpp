// The score expressions' CPU kernels made ready before training starts (model_config.h), so that a
// compiler that is missing or fails stops the run before any step, and the first step's time is
// the step's.
#include <chrono>

#include <fmt/format.h>

#include "attnlab/expr/score_kernels.h"
#include "attnlab/nmt/model/model_config.h"

namespace attnlab::nmt {

std::string prepare_expression_kernels(const TransformerConfig& config) {
  if (!config.expressions.any()) return {};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> compiled, cached;
  for (AttentionSite site : kAttentionSites) {
    const auto e = site_expressions(config, site);
    if (!e) continue;
    (expr::cpu_kernels(*e).compiled_now ? compiled : cached).push_back(attention_site_name(site));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string line = "score expressions: CPU kernels of ";
  if (!compiled.empty()) line += fmt::format("{} compiled now ({:.1f} s)", fmt::join(compiled, ", "), seconds);
  if (!compiled.empty() && !cached.empty()) line += "; of ";
  if (!cached.empty()) line += fmt::format("{} from the kernel cache", fmt::join(cached, ", "));
  return line + fmt::format(" ({})", expr::kernel_cache_folder());
}

}  // namespace attnlab::nmt
