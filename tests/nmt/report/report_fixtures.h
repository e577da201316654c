// What the report tests share: a suite state's row, a finished row's result.json, finding a report row by name and
// counting a needle in rendered output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "attnlab/nmt/report/report.h"
#include "attnlab/nmt/suite/suite_results.h"

namespace attnlab::nmt::testing {

// How often `needle` occurs in `haystack` (overlapping occurrences count).
inline std::size_t count_of(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

// A finished row's result: 200 steps of a 65M-parameter model with the given dev perplexity and BLEU.
inline RowResult make_result(const std::string& row, std::uint64_t seed, double ppl, double bleu) {
  RowResult r;
  r.row = row;
  r.seed = seed;
  r.steps = 200;
  r.parameters = 65'000'000;
  r.train_seconds = 3725.0;
  r.tokens_per_second = 12345.0;
  r.dev_ppl = ppl;
  r.dev_ppl_smoothed = ppl * 1.5;
  r.bleu = bleu;
  r.bleu_mode = "sacrebleu";
  r.bleu_signature = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0";
  return r;
}

// A row of a suite's state, in folder `<name>-s<seed>-0123456789abcdef`, with its settings.
inline SuiteRowState make_row_state(const std::string& name, std::uint64_t seed,
                                    std::vector<std::pair<std::string, std::string>> settings) {
  SuiteRowState r;
  r.name = name;
  r.seed = seed;
  r.hash = "0123456789abcdef";
  r.dir = name + "-s" + std::to_string(seed) + "-" + r.hash;
  r.settings = std::move(settings);
  return r;
}

// The report's row called `name`; fails the test if there is none.
inline const ReportRow& row_named(const Report& r, const std::string& name) {
  for (const auto& row : r.rows)
    if (row.name == name) return row;
  FAIL("no row " << name);
  return r.rows.front();
}

}  // namespace attnlab::nmt::testing
