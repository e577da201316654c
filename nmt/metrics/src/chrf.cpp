// chrF with sacreBLEU 2.x semantics (sacrebleu/metrics/chrf.py, default: effective-order averaging).
#include "attnlab/nmt/metrics/chrf.h"

#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "attnlab/error.h"
#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/metrics/unicode_text.h"

namespace attnlab::nmt {
namespace {

using CharCounts = std::unordered_map<std::u32string_view, std::int64_t>;
using WordCounts = std::unordered_map<std::string, std::int64_t>;

// One segment's n-gram counters: char orders 1..char_order, then word orders 1..word_order.
struct SegmentNgrams {
  // Owns the characters the keys of `char_ngrams` view; on the heap so that moving a
  // SegmentNgrams (short strings live inside the string object) keeps the views valid.
  std::unique_ptr<std::u32string> chars = std::make_unique<std::u32string>();
  std::vector<CharCounts> char_ngrams;
  std::vector<WordCounts> word_ngrams;
};

bool is_ascii_punct(char c) {
  static constexpr std::string_view kPuncts = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  return kPuncts.find(c) != std::string_view::npos;
}

// CHRF._remove_punctuation: split one leading or trailing ASCII punctuation off each word.
std::vector<std::string> remove_punctuation(std::string_view sent) {
  std::vector<std::string> out;
  for (std::string_view w : python_split(sent)) {
    if (utf8_decode(w).size() == 1) {
      out.emplace_back(w);
    } else if (is_ascii_punct(w.back())) {
      out.emplace_back(w.substr(0, w.size() - 1));
      out.emplace_back(w.substr(w.size() - 1));
    } else if (is_ascii_punct(w.front())) {
      out.emplace_back(w.substr(0, 1));
      out.emplace_back(w.substr(1));
    } else {
      out.emplace_back(w);
    }
  }
  return out;
}

SegmentNgrams extract(std::string_view segment, const ChrfConfig& config) {
  SegmentNgrams g;
  std::u32string all = utf8_decode(segment);
  if (config.whitespace) {
    *g.chars = std::move(all);
  } else {
    for (char32_t cp : all)
      if (!is_python_space(cp)) g.chars->push_back(cp);
  }
  const std::u32string_view view(*g.chars);
  for (int n = 1; n <= config.char_order; ++n) {
    CharCounts counts;
    for (std::size_t i = 0; i + static_cast<std::size_t>(n) <= view.size(); ++i)
      ++counts[view.substr(i, static_cast<std::size_t>(n))];
    g.char_ngrams.push_back(std::move(counts));
  }
  if (config.word_order > 0) {
    const std::vector<std::string> words = remove_punctuation(segment);
    for (int n = 1; n <= config.word_order; ++n) {
      WordCounts counts;
      for (std::size_t i = 0; i + static_cast<std::size_t>(n) <= words.size(); ++i) {
        std::string key = words[i];
        for (std::size_t k = 1; k < static_cast<std::size_t>(n); ++k) key += " " + words[i + k];
        ++counts[key];
      }
      g.word_ngrams.push_back(std::move(counts));
    }
  }
  return g;
}

// CHRF._get_match_statistics: [hyp count (0 when the reference has none), ref count, matches].
template <typename Counts>
void match_statistics(const Counts& hyp, const Counts& ref, std::vector<std::int64_t>& out) {
  std::int64_t match = 0, hyp_count = 0, ref_count = 0;
  for (const auto& [ngram, count] : hyp) {
    hyp_count += count;
    const auto it = ref.find(ngram);
    if (it != ref.end()) match += std::min(count, it->second);
  }
  for (const auto& entry : ref) ref_count += entry.second;
  out.push_back(ref.empty() ? 0 : hyp_count);
  out.push_back(ref_count);
  out.push_back(match);
}

// CHRF._compute_f_score without eps smoothing.
double f_score(const std::vector<std::int64_t>& stats, const ChrfConfig& config) {
  const double factor = static_cast<double>(config.beta) * static_cast<double>(config.beta);
  double avg_prec = 0.0, avg_rec = 0.0;
  int effective_order = 0;
  for (std::size_t i = 0; i + 2 < stats.size(); i += 3) {
    const std::int64_t n_hyp = stats[i], n_ref = stats[i + 1], n_match = stats[i + 2];
    if (n_hyp > 0 && n_ref > 0) {
      avg_prec += static_cast<double>(n_match) / static_cast<double>(n_hyp);
      avg_rec += static_cast<double>(n_match) / static_cast<double>(n_ref);
      ++effective_order;
    }
  }
  if (effective_order == 0) return 0.0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0.0) return 0.0;
  double score = (1 + factor) * avg_prec * avg_rec;
  score /= ((factor * avg_prec) + avg_rec);
  return 100 * score;
}

}  // namespace

std::string ChrfScore::format(std::string_view signature, int width) const {
  const std::string full = signature.empty() ? name : fmt::format("{}|{}", name, signature);
  return fmt::format("{} = {:.{}f}", full, score, width);
}

std::string chrf_signature(const ChrfConfig& config, int num_refs) {
  return fmt::format("nrefs:{}|case:{}|eff:yes|nc:{}|nw:{}|space:{}|version:{}",
                     num_refs < 0 ? std::string("var") : std::to_string(num_refs), config.lowercase ? "lc" : "mixed",
                     config.char_order, config.word_order, config.whitespace ? "yes" : "no", kSacreBleuVersion);
}

ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references, const ChrfConfig& config) {
  if (config.char_order < 0 || config.word_order < 0 || config.char_order + config.word_order < 1)
    throw Error(fmt::format("chrF: bad orders (char {}, word {})", config.char_order, config.word_order));
  if (references.empty()) throw Error("chrF: no reference stream given");
  for (std::size_t r = 0; r < references.size(); ++r) {
    if (references[r].size() != hypotheses.size())
      throw Error(fmt::format("chrF: the hypothesis stream has {} lines but reference stream {} has {}",
                              hypotheses.size(), r + 1, references[r].size()));
  }
  const std::size_t order = static_cast<std::size_t>(config.char_order + config.word_order);
  ChrfScore out;
  out.name = fmt::format("chrF{}{}", config.beta, std::string(static_cast<std::size_t>(config.word_order), '+'));
  out.stats.assign(order * 3, 0);
  auto prep = [&](std::string_view s, std::string_view what) {
    check_utf8(s, what);
    return config.lowercase ? python_lower(s) : std::string(s);
  };
  std::vector<std::int64_t> stats, best;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    std::vector<SegmentNgrams> refs;
    for (std::size_t r = 0; r < references.size(); ++r) {
      const std::string& ref = references[r][i];  // "" is an empty reference, as in sacreBLEU
      refs.push_back(extract(prep(ref, fmt::format("chrF reference {} line {}", r + 1, i + 1)), config));
    }
    const SegmentNgrams hyp = extract(prep(hypotheses[i], fmt::format("chrF hypothesis line {}", i + 1)), config);
    double best_f = -1.0;
    best.clear();
    for (const SegmentNgrams& ref : refs) {
      stats.clear();
      for (std::size_t n = 0; n < hyp.char_ngrams.size(); ++n) match_statistics(hyp.char_ngrams[n], ref.char_ngrams[n], stats);
      for (std::size_t n = 0; n < hyp.word_ngrams.size(); ++n) match_statistics(hyp.word_ngrams[n], ref.word_ngrams[n], stats);
      const double f = f_score(stats, config);
      if (f > best_f) {
        best_f = f;
        best = stats;
      }
    }
    for (std::size_t k = 0; k < order * 3; ++k) out.stats[k] += best[k];
  }
  out.score = f_score(out.stats, config);
  return out;
}

}  // namespace attnlab::nmt
