#pragma once
// The [search] table of a suite file (search.h): read with the suite, checked once its rows are
// resolved, every error with file:line:column and the key.
#include <string>

#include "attnlab/config/table_reader.h"
#include "attnlab/nmt/suite/suite.h"

namespace attnlab::nmt::suite_detail {

struct SearchTable {
  SearchSpec spec;              // max_steps 0 when the table leaves it to the rows
  std::string first_rung_at;    // file:line:column of each key's value
  std::string max_steps_at;
  std::string metric_at;
};

// Reads [search]: method (only "halving"), metric (dev_ppl or dev_bleu), eta (>= 2), first_rung
// (> 0), max_steps (optional, > first_rung).
SearchTable read_search_table(config::TableReader& table);

// The rows' max_steps under the search: search.max_steps replaces [base]'s, but not a row's own
// training.max_steps (which check_search then refuses when it differs).
void apply_search_steps(const SearchTable& search, SuiteRow& row);

// Checks the search against the resolved rows and sets its max_steps where the table left it to
// them: every row trains to the same max_steps, above the first rung; every row has a dev set;
// ranking by dev_ppl needs the rungs at dev evaluations (first_rung a multiple of eval_every).
void check_search(const SearchTable& search, Suite& suite);

}  // namespace attnlab::nmt::suite_detail
