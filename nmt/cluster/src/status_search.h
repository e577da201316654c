#pragma once
// Internal to `attnlab status`: the rows of a suite under a search, read from its search.json.
#include "attnlab/nmt/cluster/status.h"

namespace attnlab::nmt {

// Sets the report's search summary and every row's standing from <run_dir>/search.json (nothing
// without one): a row the rule holds at a rung becomes kHeld (no log tail: nothing went wrong), a
// row the search recorded as failed kFailed with its error, and a running row's ETA is the time to
// the rung it trains towards.
void add_search_standings(StatusReport& report);

}  // namespace attnlab::nmt
