// Fuzzes search.json's reader (search_state_from_json): a text it accepts must be safe for every
// use the runners, `attnlab status` and the report make of it, every row's standing, its words
// and its place (run_standing), the search's course (summary, steps trained, best row), and the
// rule's next decisions (each row's next rung recorded, a failure recorded); written back, it
// reads back to the same text.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "attnlab/nmt/suite/search_state.h"
#include "fuzz_input.h"

namespace {

using namespace attnlab;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  nmt::SearchState s;
  try {
    s = nmt::search_state_from_json(fuzz::as_text(data, size), "search.json");
  } catch (const std::exception&) {
    return 0;
  }
  const std::string text = nmt::search_state_to_json(s);
  if (nmt::search_state_to_json(nmt::search_state_from_json(text, "search.json")) != text)
    finding("search.json does not read back to what was written:\n" + text);
  (void)nmt::search_summary(s);
  (void)s.steps_trained();
  std::int64_t rung = 0;
  (void)s.best_so_far(rung);
  for (const nmt::SearchRowState& r : s.rows)
    for (const bool finished : {false, true}) {
      (void)nmt::run_standing(s, r.dir, finished);
      (void)nmt::search_standing_text(s, r.key, finished);
    }
  (void)nmt::run_standing(s, "a-folder-search.json-does-not-name", false);
  // The rule's next decisions: each row's next rung, then a failure, on copies.
  for (const nmt::SearchRowState& r : s.rows) {
    nmt::SearchState next = s;
    fuzz::expect_errors([&] { next.record(r.key, r.reached(), 1.5); });
    fuzz::expect_errors([&] { next.record_failure(r.key, "failed"); });
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(next.rungs.size()); ++k) (void)next.rung_closed(k);
  }
  return 0;
}
