// Fuzzes the BLEU tokenizers and the scorers behind them. The whole input goes through every
// tokenizer and compound splitting; then its lines are hypotheses (even lines) and references (odd
// lines) for corpus BLEU and chrF, with the options chosen by the first byte. Scores must lie in
// [0, 100] (up to rounding).
#include <cstdio>
#include <cstdlib>

#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/metrics/chrf.h"
#include "fuzz_input.h"

namespace {

// (sacreBLEU's exp(mean(log(100 * p))) gives 100.00000000000004 for a perfect match, and so do we.)
void check_score(double score, const char* what) {
  if (!(score >= 0.0 && score <= 100.0 + 1e-9)) {
    std::fprintf(stderr, "%s score %.17g is outside [0, 100]\n", what, score);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnlab;
  using nmt::BleuTokenizer;
  const std::string_view text = fuzz::as_text(data, size);
  for (BleuTokenizer t : {BleuTokenizer::k13a, BleuTokenizer::kIntl, BleuTokenizer::kChar, BleuTokenizer::kNone})
    fuzz::expect_errors([&] { (void)nmt::bleu_tokenize(text, t); });
  fuzz::expect_errors([&] { (void)nmt::compound_split(text); });
  if (size == 0) return 0;

  const unsigned options = data[0];
  std::vector<std::string> hypotheses, references;
  std::string_view rest = text.substr(1);
  for (std::size_t i = 0; !rest.empty(); ++i) {
    const std::size_t end = rest.find('\n');
    (i % 2 == 0 ? hypotheses : references).emplace_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  references.resize(hypotheses.size());

  nmt::BleuConfig bleu;
  bleu.tokenize = static_cast<BleuTokenizer>(options & 3u);
  bleu.lowercase = options & 4u;
  bleu.smooth = static_cast<nmt::BleuSmooth>((options >> 3) & 3u);
  bleu.effective_order = options & 32u;
  bleu.compound_split = options & 64u;
  fuzz::expect_errors([&] { check_score(nmt::corpus_bleu(hypotheses, {references}, bleu).score, "BLEU"); });
  fuzz::expect_errors([&] {
    if (!hypotheses.empty()) check_score(nmt::sentence_bleu(hypotheses[0], {references[0]}, bleu).score, "sentence BLEU");
  });

  nmt::ChrfConfig chrf;
  chrf.word_order = options & 128u ? 2 : 0;
  chrf.lowercase = bleu.lowercase;
  chrf.whitespace = options & 1u;
  fuzz::expect_errors([&] { check_score(nmt::corpus_chrf(hypotheses, {references}, chrf).score, "chrF"); });
  return 0;
}
