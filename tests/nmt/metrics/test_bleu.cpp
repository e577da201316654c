// Corpus BLEU against sacreBLEU 2.6.0's own test vectors, the signature and score string, the
// paper-style modes, chrF, error paths and one real WMT17 system.
#include <cmath>
#include <fstream>
#include <regex>

#include <doctest/doctest.h>

#include "attnlab/error.h"
#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/metrics/chrf.h"
#include "bleu_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

BleuConfig config_of(const nlohmann::json& v) {
  BleuConfig c;
  if (v.contains("tokenize")) c.tokenize = parse_bleu_tokenizer(v.at("tokenize").get<std::string>());
  c.smooth = parse_bleu_smooth(v.at("smooth").get<std::string>());
  if (!v.at("smooth_value").is_null()) c.smooth_value = v.at("smooth_value").get<double>();
  c.effective_order = v.at("effective_order").get<bool>();
  if (v.contains("lowercase")) c.lowercase = v.at("lowercase").get<bool>();
  if (v.contains("max_ngram_order")) c.max_ngram_order = v.at("max_ngram_order").get<int>();
  return c;
}

std::string error_of(const auto& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

const std::vector<std::string> kHyps = {"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."};
const std::vector<std::vector<std::string>> kRefs = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};

}  // namespace

TEST_CASE("BLEU reproduces every sacreBLEU bleu vector") {
  const auto vectors = testing::load_bleu_vectors("bleu_vectors.json");
  CHECK(vectors.size() >= 38);
  for (const auto& v : vectors) {
    const std::string id = v.at("id");
    INFO("vector " << id << ": " << v.dump());
    const BleuConfig config = config_of(v);
    const auto hyps = v.at("hyps").get<std::vector<std::string>>();
    const auto refs = v.at("refs").get<std::vector<std::vector<std::string>>>();
    BleuScore s;
    if (v.value("level", "corpus") == "sentence") {
      REQUIRE(hyps.size() == 1);
      std::vector<std::string> sentence_refs;
      for (const auto& stream : refs) sentence_refs.push_back(stream.at(0));
      s = sentence_bleu(hyps[0], sentence_refs, config);
    } else {
      s = corpus_bleu(hyps, refs, config);
    }
    CHECK(std::abs(s.score - v.at("expected_score").get<double>()) <= v.at("tolerance").get<double>());
    CHECK(s.counts == v.at("counts").get<std::vector<double>>());
    CHECK(s.totals == v.at("totals").get<std::vector<double>>());
    CHECK(s.sys_len == v.at("sys_len").get<std::int64_t>());
    CHECK(s.ref_len == v.at("ref_len").get<std::int64_t>());
    CHECK(s.bp == v.at("bp").get<double>());
  }
}

TEST_CASE("BLEU from statistics reproduces every sacreBLEU stats vector") {
  const auto vectors = testing::load_bleu_vectors("stats_vectors.json");
  CHECK(vectors.size() >= 7);
  for (const auto& v : vectors) {
    INFO("stats vector: " << v.dump());
    BleuConfig config = config_of(v);
    BleuStats stats;
    stats.correct = v.at("correct").get<std::vector<std::int64_t>>();
    stats.total = v.at("total").get<std::vector<std::int64_t>>();
    stats.sys_len = v.at("sys_len").get<std::int64_t>();
    stats.ref_len = v.at("ref_len").get<std::int64_t>();
    config.max_ngram_order = static_cast<int>(stats.correct.size());
    const BleuScore s = compute_bleu(stats, config);
    CHECK(std::abs(s.score - v.at("expected_score").get<double>()) <= 1e-8);
  }
}

TEST_CASE("score string and signature match sacreBLEU's text output") {
  const BleuConfig config;
  const BleuScore s = corpus_bleu(kHyps, kRefs, config);
  CHECK(s.num_refs == 2);
  CHECK(s.format() == "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  CHECK(bleu_signature(config, 1) == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");
  CHECK(s.format(bleu_signature(config, s.num_refs)) ==
        "BLEU|nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = 48.53 82.4/50.0/45.5/37.5 "
        "(BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");

  BleuConfig floor;
  floor.smooth = BleuSmooth::kFloor;
  CHECK(bleu_signature(floor, 1) == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:floor[0.10]|version:2.6.0");
  BleuConfig addk;
  addk.smooth = BleuSmooth::kAddK;
  addk.smooth_value = 2;
  addk.effective_order = true;
  addk.lowercase = true;
  addk.tokenize = BleuTokenizer::kIntl;
  CHECK(bleu_signature(addk, -1) == "nrefs:var|case:lc|eff:yes|tok:intl|smooth:add-k[2.00]|version:2.6.0");
  CHECK(bleu_signature(BleuConfig::tokenized(true), 1) == "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0");
  CHECK(bleu_signature(BleuConfig::paper_wmt14(), 1) ==
        "nrefs:1|case:mixed|eff:no|tok:none+compound-split|smooth:exp|version:2.6.0");
}

TEST_CASE("an empty reference line is an empty reference, as sacreBLEU scores it") {
  // Segment 2's reference is "": its hypothesis n-grams count (0 of 2, 0 of 1), its length 0.
  const std::vector<std::string> hyps = {"the cat sat on the mat", "a dog"};
  const std::vector<std::vector<std::string>> refs = {{"the cat sat on the mat", ""}};
  const BleuScore s = corpus_bleu(hyps, refs, BleuConfig{});
  CHECK(s.num_refs == 1);
  CHECK(s.format() == "BLEU = 88.91 75.0/83.3/100.0/100.0 (BP = 1.000 ratio = 1.333 hyp_len = 8 ref_len = 6)");
  // The same against no empty line: segment 1 alone is a perfect match.
  CHECK(corpus_bleu({hyps[0]}, {{refs[0][0]}}, BleuConfig{}).score == doctest::Approx(100.0));
  // chrF: the empty reference adds nothing (sacreBLEU counts no hypothesis n-grams against it).
  CHECK(corpus_chrf({"abc", "xyz"}, {{"abc", ""}}).score == doctest::Approx(100.0));
  CHECK(corpus_chrf({"xyz"}, {{""}}).score == 0.0);
}

TEST_CASE("an empty reference takes part in the closest reference length") {
  // Lengths 6 and 0 against a 2-token hypothesis: 0 is closer, so no brevity penalty.
  BleuConfig config;
  config.effective_order = true;
  const BleuScore s = corpus_bleu({"a b"}, {{"a b c d e f"}, {""}}, config);
  CHECK(s.ref_len == 0);
  CHECK(s.bp == 1.0);
  CHECK(s.score == doctest::Approx(100.0));
  CHECK(s.num_refs == 2);
  const BleuScore one = corpus_bleu({"a b"}, {{"a b c d e f"}}, config);
  CHECK(one.ref_len == 6);
  CHECK(one.score == doctest::Approx(100.0 * std::exp(1.0 - 3.0)));
  CHECK(error_of([&] { sentence_bleu_stats("a", {}, config); }) == "BLEU: segment 1 has no reference");
}

TEST_CASE("paper-style WMT14 BLEU splits compounds before scoring") {
  const std::vector<std::string> hyps = {"das ist ein state-of-the-art System ."};
  const std::vector<std::vector<std::string>> refs = {{"das ist ein state-of-the-art Modell ."}};
  const BleuScore plain = corpus_bleu(hyps, refs, BleuConfig::tokenized());
  const BleuScore split = corpus_bleu(hyps, refs, BleuConfig::paper_wmt14());
  CHECK(plain.sys_len == 6);
  CHECK(split.sys_len == 12);  // state ##AT##-##AT## of ##AT##-##AT## the ##AT##-##AT## art
  CHECK(split.counts[0] == 11);
  CHECK(split.score > plain.score);
  CHECK(bleu_preprocess("a-b c", BleuConfig::paper_wmt14()) == "a ##AT##-##AT## b c");
}

TEST_CASE("tokenized BLEU with lowercasing scores pre-tokenized text as is") {
  const std::vector<std::string> hyps = {"Ein Mann &apos;s Hund ."};
  const std::vector<std::vector<std::string>> refs = {{"ein mann &apos;s hund ."}};
  const BleuScore s = corpus_bleu(hyps, refs, BleuConfig::tokenized(true));
  CHECK(s.score == doctest::Approx(100.0));
  CHECK(s.sys_len == 5);
  CHECK(corpus_bleu(hyps, refs, BleuConfig::tokenized(false)).score < 100.0);
}

TEST_CASE("streams of different lengths are refused with both counts") {
  const std::vector<std::string> hyps = {"a", "b"};
  const std::vector<std::vector<std::string>> refs = {{"a", "b"}, {"a", "b", "c"}};
  const std::string message = error_of([&] { corpus_bleu(hyps, refs); });
  CHECK(message == "BLEU: the hypothesis stream has 2 lines but reference stream 2 has 3");
  CHECK(error_of([&] { corpus_bleu(hyps, {}); }) == "BLEU: no reference stream given");
  CHECK(error_of([&] { corpus_chrf(hyps, {{"a"}}); }) ==
        "chrF: the hypothesis stream has 2 lines but reference stream 1 has 1");
  BleuConfig bad;
  bad.max_ngram_order = 0;
  CHECK(error_of([&] { corpus_bleu(hyps, {{"a", "b"}}, bad); }).find("max_ngram_order") != std::string::npos);
  CHECK(error_of([&] { parse_bleu_smooth("laplace"); }).find("laplace") != std::string::npos);
}

TEST_CASE("statistics add up and sentence statistics sum to the corpus") {
  BleuStats sum;
  for (std::size_t i = 0; i < kHyps.size(); ++i) sum += sentence_bleu_stats(kHyps[i], {kRefs[0][i], kRefs[1][i]}, {});
  const BleuStats corpus = corpus_bleu_stats(kHyps, kRefs, {});
  CHECK(sum.correct == corpus.correct);
  CHECK(sum.total == corpus.total);
  CHECK(sum.sys_len == corpus.sys_len);
  CHECK(sum.ref_len == corpus.ref_len);
  CHECK(compute_bleu(sum, {}).score == compute_bleu(corpus, {}).score);
  // The per-segment statistics are each segment's sentence statistics, in order.
  const std::vector<BleuStats> segments = segment_bleu_stats(kHyps, kRefs, {});
  REQUIRE(segments.size() == kHyps.size());
  for (std::size_t i = 0; i < kHyps.size(); ++i) {
    const BleuStats one = sentence_bleu_stats(kHyps[i], {kRefs[0][i], kRefs[1][i]}, {});
    CHECK(segments[i].correct == one.correct);
    CHECK(segments[i].total == one.total);
    CHECK(segments[i].sys_len == one.sys_len);
    CHECK(segments[i].ref_len == one.ref_len);
  }
  CHECK(error_of([&] { segment_bleu_stats({"a", "b"}, {{"a"}}, {}); }) ==
        "BLEU: the hypothesis stream has 2 lines but reference stream 1 has 1");
}

TEST_CASE("chrF follows sacreBLEU's defaults") {
  const ChrfConfig config;
  CHECK(chrf_signature(config, 1) == "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0");
  const ChrfScore same = corpus_chrf({"the cat sat"}, {{"the cat sat"}});
  CHECK(same.score == doctest::Approx(100.0));
  CHECK(same.format() == "chrF2 = 100.00");
  CHECK(corpus_chrf({"xyz"}, {{"abc"}}).score == 0.0);
  // "ab" vs "abc": orders 1 and 2 (the hypothesis has no 3-grams): P = (1 + 1) / 2 = 1,
  // R = (2/3 + 1/2) / 2 = 7/12, chrF2 = 5 P R / (4 P + R) = 35/55 = 63.636...
  const ChrfScore partial = corpus_chrf({"ab"}, {{"abc"}});
  CHECK(partial.score == doctest::Approx(100.0 * 35.0 / 55.0));
  CHECK(partial.format(chrf_signature(config, 1)) ==
        "chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0 = 63.64");
  ChrfConfig plus;
  plus.word_order = 2;
  CHECK(corpus_chrf({"the cat sat."}, {{"the cat sat."}}, plus).name == "chrF2++");
}

TEST_CASE("BLEU of a real WMT17 system is internally consistent") {
  const auto dir = testing::shared_data() / "wmt17_ende_systems";
  REQUIRE_MESSAGE(std::filesystem::exists(dir / "newstest2017-ende-ref.de"), "missing " << dir.string());
  const auto ref = read_lines(dir / "newstest2017-ende-ref.de");
  const auto hyp = read_lines(dir / "newstest2017.uedin-nmt.4722.en-de");
  REQUIRE(ref.size() == 3004);
  REQUIRE(hyp.size() == 3004);
  const BleuConfig config;
  const BleuScore s = corpus_bleu(hyp, {ref}, config);
  const std::string text = s.format(bleu_signature(config, s.num_refs));
  MESSAGE(text);

  static const std::regex pattern(
      R"(^BLEU\|nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|version:2\.6\.0 = ([0-9]+\.[0-9]{2}) )"
      R"(([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) \(BP = ([0-9.]+) ratio = ([0-9.]+) hyp_len = ([0-9]+) ref_len = ([0-9]+)\)$)");
  std::smatch m;
  REQUIRE(std::regex_match(text, m, pattern));
  const double score = std::stod(m[1]), bp = std::stod(m[6]), ratio = std::stod(m[7]);
  const double hyp_len = std::stod(m[8]), ref_len = std::stod(m[9]);
  CHECK(score > 0.0);
  CHECK(score < 100.0);
  CHECK(hyp_len == static_cast<double>(s.sys_len));
  CHECK(ref_len == static_cast<double>(s.ref_len));
  CHECK(ratio == doctest::Approx(hyp_len / ref_len).epsilon(1e-3));
  CHECK(bp == doctest::Approx(hyp_len < ref_len ? std::exp(1.0 - ref_len / hyp_len) : 1.0).epsilon(1e-3));
  // The score is BP times the geometric mean of the printed precisions (to print precision).
  double log_sum = 0;
  for (int n = 2; n <= 5; ++n) log_sum += std::log(std::stod(m[n]));
  CHECK(score == doctest::Approx(bp * std::exp(log_sum / 4)).epsilon(2e-3));
  for (std::size_t n = 0; n < 4; ++n) {
    CHECK(s.counts[n] <= s.totals[n]);
    CHECK(s.precisions[n] == doctest::Approx(100.0 * s.counts[n] / s.totals[n]));
    if (n > 0) CHECK(s.precisions[n] < s.precisions[n - 1]);
  }
  CHECK(s.totals[0] == static_cast<double>(s.sys_len));
  CHECK(s.totals[1] < s.totals[0]);
  // Regression value: an independent Python transcription of sacreBLEU 2.6.0's 13a BLEU (re module,
  // Counter n-grams) gives 28.301225088283296 for this system (matrix.statmt.org lists 28.3).
  CHECK(s.score == doctest::Approx(28.301225088283296).epsilon(1e-12));
  CHECK(s.sys_len == 62873);
  CHECK(s.ref_len == 61287);
  CHECK(s.ref_len > 55000);
}
