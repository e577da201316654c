#pragma once
// What becomes of a suite's rows that their attention plugin cannot serve (on the row's device,
// with its positions, dropout or head sizes): decided by each row's `unsupported` setting once
// the plugins are loaded.
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::nmt {

// Validates every row's plugins and options. A row that its attention plugin (and fallback)
// cannot serve is marked skipped with the reason when its `unsupported` is "skip", gets the
// fallback scaled_dot (unless it names its own) with "fallback", and with "error" (as for every
// other mistake: an unknown plugin, a bad option) the suite is refused, naming the row's position
// and name. Run folders keep the names the suite gave them. Rows are then re-matched for identical
// runs, skipped rows left out.
void apply_unsupported(Suite& suite, const Registry& registry);

}  // namespace attnlab::nmt
