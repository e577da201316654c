#pragma once
// chrF (Popović 2015) as sacreBLEU 2.x computes it (metrics/chrf.py): character n-grams of
// order 1..6 with whitespace removed, beta 2, sacreBLEU's effective-order averaging (not eps
// smoothing); per segment the reference with the best F score wins; corpus statistics are sums.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::nmt {

struct ChrfConfig {
  int char_order = 6;
  int word_order = 0;  // 2 is chrF++
  int beta = 2;
  bool lowercase = false;
  bool whitespace = false;  // keep whitespace inside character n-grams
};

struct ChrfScore {
  double score = 0.0;                   // 0..100
  std::vector<std::int64_t> stats;      // [hyp, ref, match] per order (chars, then words)
  std::string name;                     // "chrF2", "chrF2++"
  std::string format(std::string_view signature = {}, int width = 2) const;
};

// "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"
std::string chrf_signature(const ChrfConfig& config, int num_refs);

ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references, const ChrfConfig& config = {});

}  // namespace attnlab::nmt
