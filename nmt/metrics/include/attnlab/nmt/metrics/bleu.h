#pragma once
// Corpus BLEU, compatible with sacreBLEU 2.x (metrics/bleu.py) to the last digit.
//
// Pipeline per segment (hypotheses and every reference): optional lowercasing (Python
// str.lower), trailing whitespace stripped, the tokenizer (bleu_tokenize.h), optionally
// tensor2tensor compound splitting; then n-grams of the whitespace-separated tokens.
// Statistics per segment: clipped n-gram matches (against the maximum count over the
// segment's references), n-gram totals, hypothesis length and the closest reference length
// (the shorter one on ties). Corpus statistics are their sums; the score is computed once.
//
// Modes (see docs/evaluation.md):
//   BleuConfig::sacrebleu()        detokenized text, 13a: the comparable WMT number
//   BleuConfig::tokenized(lc)      pre-tokenized text, tokenize none (Multi30k / IWSLT papers)
//   BleuConfig::paper_wmt14()      pre-tokenized text, compound splitting, tokenize none
//                                  (the Transformer paper's WMT14 EN-DE numbers; tensor2tensor)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/name_table.h"
#include "attnlab/nmt/metrics/bleu_tokenize.h"

namespace attnlab::nmt {

// The sacreBLEU version whose numbers and signature this implementation reproduces.
inline constexpr std::string_view kSacreBleuVersion = "2.6.0";

enum class BleuSmooth { kNone, kFloor, kAddK, kExp };
// sacreBLEU's names for them (its --smooth-method and signature).
inline constexpr auto kBleuSmooths = name_table<BleuSmooth>("BLEU smoothing", {{BleuSmooth::kExp, "exp"},
                                                                             {BleuSmooth::kFloor, "floor"},
                                                                             {BleuSmooth::kAddK, "add-k"},
                                                                             {BleuSmooth::kNone, "none"}});

std::string_view bleu_smooth_name(BleuSmooth smooth);
BleuSmooth parse_bleu_smooth(std::string_view name);  // throws attnlab::Error on unknown names

// How a score is computed ([eval] bleu, `attnlab eval --bleu`): sacreBLEU's on detokenized text
// (13a), tokenized BLEU, or the paper's WMT14 convention (tokenized, compound splitting).
enum class BleuMode : std::uint8_t { sacrebleu, tokenized, paper_wmt14 };
inline constexpr auto kBleuModes = name_table<BleuMode>("BLEU mode", {{BleuMode::sacrebleu, "sacrebleu"},
                                                                    {BleuMode::tokenized, "tokenized"},
                                                                    {BleuMode::paper_wmt14, "paper-wmt14"}});
// sacreBLEU's SMOOTH_DEFAULTS: floor 0.1, add-k 1; none for the other two.
std::optional<double> bleu_smooth_default(BleuSmooth smooth);

struct BleuConfig {
  BleuTokenizer tokenize = BleuTokenizer::k13a;
  bool lowercase = false;
  BleuSmooth smooth = BleuSmooth::kExp;
  std::optional<double> smooth_value;  // unset: bleu_smooth_default(smooth)
  bool effective_order = false;
  int max_ngram_order = 4;
  bool compound_split = false;  // t2t "a-b" -> "a ##AT##-##AT## b" after tokenizing

  static BleuConfig sacrebleu();                          // 13a, mixed case, exp
  static BleuConfig tokenized(bool lowercase = false);    // tokenize none
  static BleuConfig paper_wmt14();                        // compound splitting + tokenize none

  // Throws attnlab::Error when an option is out of range (order < 1, negative smoothing value).
  void validate() const;
  // The tokenizer part of the signature: "13a", "none", "none+compound-split", ...
  std::string tokenizer_signature() const;
};

// Sufficient statistics of one segment or a whole corpus.
struct BleuStats {
  std::int64_t sys_len = 0;
  std::int64_t ref_len = 0;
  std::vector<std::int64_t> correct;  // clipped matches per order 1..N
  std::vector<std::int64_t> total;    // hypothesis n-grams per order 1..N
  int num_refs = 0;                   // references per segment; -1 when it varies ("var")

  BleuStats& operator+=(const BleuStats& other);
};

struct BleuScore {
  double score = 0.0;               // 0..100
  std::vector<double> counts;       // as used in the score (add-k adds k for n > 1)
  std::vector<double> totals;       // idem
  std::vector<double> precisions;   // percent, per order
  double bp = 0.0;                  // brevity penalty
  std::int64_t sys_len = 0;
  std::int64_t ref_len = 0;
  int num_refs = 0;

  double ratio() const;  // sys_len / ref_len, 0 without reference tokens
  // sacreBLEU's text, e.g. "BLEU = 31.34 62.4/36.9/24.8/17.2 (BP = 1.000 ratio = 1.013
  // hyp_len = 63417 ref_len = 62600)"; with a signature: "BLEU|<signature> = 31.34 ...".
  std::string format(std::string_view signature = {}, int width = 2) const;
};

// The signature: "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0".
// num_refs < 0 prints "var" (a variable number of references per segment).
std::string bleu_signature(const BleuConfig& config, int num_refs);

// The segment as the scorer sees it: lowercased, stripped, tokenized, compound-split.
std::string bleu_preprocess(std::string_view segment, const BleuConfig& config);

// Statistics of one hypothesis against its references (raw text, preprocessed here). An empty
// string is an empty reference (length 0, no n-grams), as sacreBLEU scores "" (only Python's None
// means "no reference" there); no reference at all throws attnlab::Error.
BleuStats sentence_bleu_stats(std::string_view hypothesis, const std::vector<std::string>& references,
                              const BleuConfig& config);

// The statistics of every segment, in order (the unit a bootstrap resamples). `references` holds
// reference streams, each as long as `hypotheses`; a stream of another length throws attnlab::Error
// naming both counts. Empty lines are empty references (sentence_bleu_stats).
std::vector<BleuStats> segment_bleu_stats(const std::vector<std::string>& hypotheses,
                                          const std::vector<std::vector<std::string>>& references,
                                          const BleuConfig& config);

// Sums of the segment statistics (segment_bleu_stats, with its checks).
BleuStats corpus_bleu_stats(const std::vector<std::string>& hypotheses,
                            const std::vector<std::vector<std::string>>& references, const BleuConfig& config);

// sacreBLEU's BLEU.compute_bleu: the score of aggregated statistics (smoothing, effective order,
// brevity penalty).
BleuScore compute_bleu(const BleuStats& stats, const BleuConfig& config);

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references, const BleuConfig& config = {});
BleuScore sentence_bleu(std::string_view hypothesis, const std::vector<std::string>& references,
                        const BleuConfig& config);

// The BleuConfig a result was scored with: bleu_mode (kBleuModes' names; an unknown one is an
// Error) and "case:lc" in the signature.
BleuConfig bleu_config_for(std::string_view bleu_mode, std::string_view signature);

}  // namespace attnlab::nmt
