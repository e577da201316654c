// Corpus BLEU with sacreBLEU 2.x semantics (sacrebleu/metrics/bleu.py).
#include "attnlab/nmt/metrics/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include <fmt/format.h>

#include "attnlab/error.h"
#include "attnlab/nmt/metrics/unicode_text.h"

namespace attnlab::nmt {
namespace {

// The n-grams of one preprocessed segment, keyed by views into its space-joined token text: an
// n-gram is the substring from its first token's start to its last token's end. Tokens contain
// no whitespace, so n-grams of different orders never share a key.
using NgramCounts = std::unordered_map<std::string_view, std::int64_t>;

struct Tokenized {
  std::string text;                                        // tokens joined by single spaces
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin, end) of each token
};

Tokenized split_tokens(std::string text) {
  Tokenized t;
  t.text = std::move(text);
  std::size_t i = 0;
  while (i < t.text.size()) {
    const std::size_t end = std::min(t.text.find(' ', i), t.text.size());
    t.spans.emplace_back(i, end);
    i = end + 1;
  }
  return t;
}

// Calls f(order, key) for every n-gram of order 1..max_order.
template <typename F>
void for_each_ngram(const Tokenized& t, int max_order, F&& f) {
  const std::size_t n_tokens = t.spans.size();
  for (int n = 1; n <= max_order; ++n) {
    for (std::size_t i = 0; i + static_cast<std::size_t>(n) <= n_tokens; ++i) {
      const std::size_t begin = t.spans[i].first, end = t.spans[i + static_cast<std::size_t>(n) - 1].second;
      f(n, std::string_view(t.text).substr(begin, end - begin));
    }
  }
}

double my_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

}  // namespace

std::string_view bleu_smooth_name(BleuSmooth smooth) { return kBleuSmooths.name(smooth); }

BleuSmooth parse_bleu_smooth(std::string_view name) { return kBleuSmooths.parse(name); }

std::optional<double> bleu_smooth_default(BleuSmooth smooth) {
  switch (smooth) {
    case BleuSmooth::kFloor: return 0.1;
    case BleuSmooth::kAddK: return 1.0;
    default: return std::nullopt;
  }
}

BleuConfig BleuConfig::sacrebleu() { return BleuConfig{}; }

BleuConfig BleuConfig::tokenized(bool lowercase) {
  BleuConfig c;
  c.tokenize = BleuTokenizer::kNone;
  c.lowercase = lowercase;
  return c;
}

BleuConfig BleuConfig::paper_wmt14() {
  BleuConfig c;
  c.tokenize = BleuTokenizer::kNone;
  c.compound_split = true;
  return c;
}

void BleuConfig::validate() const {
  if (max_ngram_order < 1)
    throw Error(fmt::format("BLEU: max_ngram_order must be at least 1, got {}", max_ngram_order));
  if (smooth_value && !(*smooth_value >= 0.0))
    throw Error(fmt::format("BLEU: the smoothing value must be >= 0, got {}", *smooth_value));
}

std::string BleuConfig::tokenizer_signature() const {
  std::string s(bleu_tokenizer_name(tokenize));
  if (compound_split) s += "+compound-split";
  return s;
}

BleuStats& BleuStats::operator+=(const BleuStats& other) {
  if (correct.empty() && total.empty()) {  // an empty accumulator takes the first statistics as they are
    *this = other;
    return *this;
  }
  if (correct.size() != other.correct.size() || total.size() != other.total.size())
    throw Error(fmt::format("BLEU: cannot add statistics of n-gram order {} to order {}", other.correct.size(),
                            correct.size()));
  sys_len += other.sys_len;
  ref_len += other.ref_len;
  for (std::size_t n = 0; n < correct.size(); ++n) {
    correct[n] += other.correct[n];
    total[n] += other.total[n];
  }
  if (num_refs != other.num_refs) num_refs = -1;
  return *this;
}

double BleuScore::ratio() const {
  return ref_len != 0 ? static_cast<double>(sys_len) / static_cast<double>(ref_len) : 0.0;
}

std::string BleuScore::format(std::string_view signature, int width) const {
  std::string precs;
  for (std::size_t n = 0; n < precisions.size(); ++n) precs += fmt::format("{}{:.1f}", n ? "/" : "", precisions[n]);
  const std::string name = signature.empty() ? std::string("BLEU") : fmt::format("BLEU|{}", signature);
  return fmt::format("{} = {:.{}f} {} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})", name, score, width,
                     precs, bp, ratio(), sys_len, ref_len);
}

std::string bleu_signature(const BleuConfig& config, int num_refs) {
  std::string smooth(bleu_smooth_name(config.smooth));
  if (const auto def = bleu_smooth_default(config.smooth))
    smooth += fmt::format("[{:.2f}]", config.smooth_value.value_or(*def));
  return fmt::format("nrefs:{}|case:{}|eff:{}|tok:{}|smooth:{}|version:{}",
                     num_refs < 0 ? std::string("var") : std::to_string(num_refs), config.lowercase ? "lc" : "mixed",
                     config.effective_order ? "yes" : "no", config.tokenizer_signature(), smooth, kSacreBleuVersion);
}

std::string bleu_preprocess(std::string_view segment, const BleuConfig& config) {
  std::string lowered;
  if (config.lowercase) {
    lowered = python_lower(segment);
    segment = lowered;
  }
  std::string tokens = bleu_tokenize(python_rstrip(segment), config.tokenize);
  if (config.compound_split) tokens = compound_split(tokens);
  return python_split_join(tokens);
}

namespace {

BleuStats segment_stats(std::string_view hypothesis, const std::vector<std::string_view>& references,
                        const BleuConfig& config, std::size_t line) {
  const int order = config.max_ngram_order;
  if (references.empty()) throw Error(fmt::format("BLEU: segment {} has no reference", line));
  check_utf8(hypothesis, fmt::format("BLEU hypothesis line {}", line));

  // Reference n-grams: the maximum count of each n-gram over the references.
  std::vector<Tokenized> refs;
  refs.reserve(references.size());
  for (std::size_t r = 0; r < references.size(); ++r) {
    check_utf8(references[r], fmt::format("BLEU reference {} line {}", r + 1, line));
    refs.push_back(split_tokens(bleu_preprocess(references[r], config)));
  }
  NgramCounts ref_max;
  if (refs.size() == 1) {
    for_each_ngram(refs[0], order, [&](int, std::string_view key) { ++ref_max[key]; });
  } else {
    NgramCounts one;
    for (const Tokenized& ref : refs) {
      one.clear();
      for_each_ngram(ref, order, [&](int, std::string_view key) { ++one[key]; });
      for (const auto& [key, count] : one) {
        std::int64_t& m = ref_max[key];
        m = std::max(m, count);
      }
    }
  }

  const Tokenized hyp = split_tokens(bleu_preprocess(hypothesis, config));
  BleuStats s;
  s.correct.assign(static_cast<std::size_t>(order), 0);
  s.total.assign(static_cast<std::size_t>(order), 0);
  s.num_refs = static_cast<int>(refs.size());
  s.sys_len = static_cast<std::int64_t>(hyp.spans.size());
  // The closest reference length; the shorter one wins a tie.
  std::int64_t closest_diff = -1;
  for (const Tokenized& ref : refs) {
    const auto len = static_cast<std::int64_t>(ref.spans.size());
    const std::int64_t diff = std::abs(s.sys_len - len);
    if (closest_diff == -1 || diff < closest_diff) {
      closest_diff = diff;
      s.ref_len = len;
    } else if (diff == closest_diff && len < s.ref_len) {
      s.ref_len = len;
    }
  }
  // Clipped matches: each distinct hypothesis n-gram counts min(hyp count, max ref count).
  NgramCounts hyp_counts;
  for_each_ngram(hyp, order, [&](int n, std::string_view key) {
    ++hyp_counts[key];
    ++s.total[static_cast<std::size_t>(n - 1)];
  });
  for (const auto& [key, count] : hyp_counts) {
    const auto it = ref_max.find(key);
    if (it == ref_max.end()) continue;
    const auto n = static_cast<std::size_t>(std::count(key.begin(), key.end(), ' '));
    s.correct[n] += std::min(count, it->second);
  }
  return s;
}

}  // namespace

BleuStats sentence_bleu_stats(std::string_view hypothesis, const std::vector<std::string>& references,
                              const BleuConfig& config) {
  config.validate();
  const std::vector<std::string_view> refs(references.begin(), references.end());
  return segment_stats(hypothesis, refs, config, 1);
}

std::vector<BleuStats> segment_bleu_stats(const std::vector<std::string>& hypotheses,
                                          const std::vector<std::vector<std::string>>& references,
                                          const BleuConfig& config) {
  config.validate();
  if (references.empty()) throw Error("BLEU: no reference stream given");
  for (std::size_t r = 0; r < references.size(); ++r) {
    if (references[r].size() != hypotheses.size())
      throw Error(fmt::format("BLEU: the hypothesis stream has {} lines but reference stream {} has {}",
                              hypotheses.size(), r + 1, references[r].size()));
  }
  std::vector<BleuStats> stats;
  stats.reserve(hypotheses.size());
  std::vector<std::string_view> refs;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    refs.clear();
    for (const auto& stream : references) refs.push_back(stream[i]);  // "" is an empty reference, as in sacreBLEU
    stats.push_back(segment_stats(hypotheses[i], refs, config, i + 1));
  }
  return stats;
}

BleuStats corpus_bleu_stats(const std::vector<std::string>& hypotheses,
                            const std::vector<std::vector<std::string>>& references, const BleuConfig& config) {
  BleuStats sum;
  sum.correct.assign(static_cast<std::size_t>(config.max_ngram_order), 0);
  sum.total.assign(static_cast<std::size_t>(config.max_ngram_order), 0);
  // Every segment has one reference per stream ("" is an empty one), so the count is the streams'.
  sum.num_refs = static_cast<int>(references.size());
  for (const BleuStats& s : segment_bleu_stats(hypotheses, references, config)) {
    sum.sys_len += s.sys_len;
    sum.ref_len += s.ref_len;
    for (std::size_t n = 0; n < s.correct.size(); ++n) {
      sum.correct[n] += s.correct[n];
      sum.total[n] += s.total[n];
    }
  }
  return sum;
}

BleuScore compute_bleu(const BleuStats& stats, const BleuConfig& config) {
  config.validate();
  const auto order = static_cast<std::size_t>(config.max_ngram_order);
  if (stats.correct.size() != order || stats.total.size() != order)
    throw Error(fmt::format("BLEU: statistics of order {}/{} do not match max_ngram_order {}", stats.correct.size(),
                            stats.total.size(), order));
  const double smooth_value = config.smooth_value.value_or(bleu_smooth_default(config.smooth).value_or(0.0));

  BleuScore out;
  out.sys_len = stats.sys_len;
  out.ref_len = stats.ref_len;
  out.num_refs = stats.num_refs;
  out.counts.assign(stats.correct.begin(), stats.correct.end());
  out.totals.assign(stats.total.begin(), stats.total.end());
  out.precisions.assign(order, 0.0);
  if (stats.sys_len < stats.ref_len)
    out.bp = stats.sys_len > 0
                 ? std::exp(1.0 - static_cast<double>(stats.ref_len) / static_cast<double>(stats.sys_len))
                 : 0.0;
  else
    out.bp = 1.0;

  // No match at all: 0 (sacreBLEU #141), before any smoothing.
  if (std::all_of(stats.correct.begin(), stats.correct.end(), [](std::int64_t c) { return c == 0; })) return out;

  double smooth_mteval = 1.0;
  std::size_t eff_order = order;
  for (std::size_t n = 1; n <= order; ++n) {
    double& correct = out.counts[n - 1];
    double& total = out.totals[n - 1];
    if (config.smooth == BleuSmooth::kAddK && n > 1) {
      correct += smooth_value;
      total += smooth_value;
    }
    if (total == 0.0) break;
    if (config.effective_order) eff_order = n;
    if (correct == 0.0) {
      if (config.smooth == BleuSmooth::kExp) {
        smooth_mteval *= 2;
        out.precisions[n - 1] = 100. / (smooth_mteval * total);
      } else if (config.smooth == BleuSmooth::kFloor) {
        out.precisions[n - 1] = 100. * smooth_value / total;
      }
    } else {
      out.precisions[n - 1] = 100. * correct / total;
    }
  }
  double log_sum = 0.0;
  for (std::size_t n = 0; n < eff_order; ++n) log_sum += my_log(out.precisions[n]);
  out.score = out.bp * std::exp(log_sum / static_cast<double>(eff_order));
  return out;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references, const BleuConfig& config) {
  return compute_bleu(corpus_bleu_stats(hypotheses, references, config), config);
}

BleuScore sentence_bleu(std::string_view hypothesis, const std::vector<std::string>& references,
                        const BleuConfig& config) {
  return compute_bleu(sentence_bleu_stats(hypothesis, references, config), config);
}

BleuConfig bleu_config_for(std::string_view bleu_mode, std::string_view signature) {
  const bool lc = signature.find("case:lc") != std::string_view::npos;
  const BleuMode mode = kBleuModes.parse(bleu_mode);
  if (mode == BleuMode::tokenized) return BleuConfig::tokenized(lc);
  if (mode == BleuMode::paper_wmt14) {
    // Our translations are detokenized text (SentencePiece): the 13a tokenizer stands in for the
    // Moses tokenizer that tensor2tensor ran before splitting compounds (tok:13a+compound-split).
    BleuConfig c = BleuConfig::paper_wmt14();
    c.tokenize = BleuTokenizer::k13a;
    c.lowercase = lc;
    return c;
  }
  BleuConfig c = BleuConfig::sacrebleu();
  c.lowercase = lc;
  return c;
}

}  // namespace attnlab::nmt
