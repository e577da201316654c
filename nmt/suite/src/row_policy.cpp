#include "attnlab/nmt/suite/row_policy.h"

#include <fmt/core.h>

#include "attnlab/error.h"
#include "attnlab/nmt/model/model_config.h"

namespace attnlab::nmt {
namespace {

// Why the row's attention plugin and its fallback cannot serve it; nullopt when one can, or when
// a plugin name is unknown (validate_plugins says that, as an error whatever the policy).
std::optional<std::string> unserved(const ExperimentConfig& c, const Registry& registry) {
  const TransformerConfig& m = c.model;
  if (!registry.contains(PluginFamily::attention, m.attention.name) ||
      !registry.contains(PluginFamily::positional, m.positional.name) ||
      (!m.attention.fallback.empty() && !registry.contains(PluginFamily::attention, m.attention.fallback)))
    return std::nullopt;
  try {
    (void)resolve_attention(m, registry, Device::parse(c.device), compute_dtype(c));
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace

void apply_unsupported(Suite& suite, const Registry& registry) {
  for (SuiteRow& row : suite.rows) {
    row.skipped.clear();
    if (row.unsupported == UnsupportedRows::skip)
      if (auto reason = unserved(row.config, registry)) {
        row.skipped = *reason;
        continue;
      }
    // Only the rows that need it get the fallback: the others, and every run folder, stay as they were.
    if (row.unsupported == UnsupportedRows::fallback && row.config.model.attention.fallback.empty() &&
        unserved(row.config, registry))
      row.config.model.attention.fallback = "scaled_dot";
    try {
      (void)validate_plugins(row.config, registry);
    } catch (const Error& e) {
      const std::string hint = row.unsupported == UnsupportedRows::error && unserved(row.config, registry)
                                   ? " (or set unsupported = \"fallback\" or \"skip\" in the grid or [suite])"
                                   : "";
      throw Error(fmt::format("{}: row {}: {}{}", row.position, row.name, e.what(), hint));
    }
  }
  mark_identical_rows(suite);
}

}  // namespace attnlab::nmt
