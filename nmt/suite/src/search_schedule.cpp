// Which row a worker of a search trains next (suite_runner.h): ASHA's order, promotions before new
// rows, read from search.json as it stands (the row's own process decides again under the lock).
#include <algorithm>
#include <filesystem>

#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/search_state.h"
#include "attnlab/nmt/suite/suite_runner.h"

namespace attnlab::nmt {

const SuiteRow* next_search_row(const Suite& suite, const std::vector<const SuiteRow*>& rows,
                                const std::set<std::string>& passed_over, bool promoted_only) {
  namespace fs = std::filesystem;
  const std::optional<SearchState> saved = read_search_state(search_state_path(suite));
  const SearchState s = saved ? *saved : make_search_state(suite);
  const SuiteRow* best = nullptr;
  std::int64_t best_rung = -1;
  for (const SuiteRow* row : rows) {
    const std::string key = row_key(*row);
    if (passed_over.count(key) || !row->skipped.empty() || !row->same_as.empty()) continue;
    // A row whose folder changed since search.json was written starts afresh (no entry).
    const SearchRowState* r = s.find_dir(fs::path(row->config.run_dir).filename().string());
    if (fs::exists(fs::path(row->config.run_dir) / "result.json")) continue;
    std::int64_t rung = -1;  // -1: not started
    if (r) {
      if (r->held()) continue;
      if (r->reached() > 0 || r->allowed > 0) rung = r->allowed;
    }
    if (promoted_only && rung < 0) continue;
    if (best && rung <= best_rung) continue;
    if (FolderLock::holder(row->config.run_dir)) continue;  // another process trains it
    best = row, best_rung = rung;
  }
  return best;
}

}  // namespace attnlab::nmt
