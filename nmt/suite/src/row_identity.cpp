// Rows that are the same run: a grid whose first point is the base configuration, or two rows
// that set the same values, train once and share that run's folder.
#include <xxhash.h>

#include <map>

#include <fmt/core.h>

#include "attnlab/nmt/suite/suite.h"

namespace attnlab::nmt {
namespace {

// Everything that decides what the row trains and how it is evaluated, but not its name.
std::uint64_t identity(const SuiteRow& row) {
  ExperimentConfig c = row.config;
  c.name.clear();
  c.run_dir.clear();
  const std::string text = to_toml(c, /*include_eval=*/true) + fmt::format("\n# seed {}\n", row.seed);
  return XXH3_64bits(text.data(), text.size());
}

}  // namespace

void mark_identical_rows(Suite& suite) {
  std::map<std::uint64_t, const SuiteRow*> first;
  for (SuiteRow& row : suite.rows) {
    row.same_as.clear();
    row.config.run_dir = row_dir(suite, row);
    if (!row.skipped.empty()) continue;
    const auto [it, fresh] = first.emplace(identity(row), &row);
    if (fresh) continue;
    row.same_as = it->second->name;
    row.config.run_dir = it->second->config.run_dir;
  }
}

}  // namespace attnlab::nmt
