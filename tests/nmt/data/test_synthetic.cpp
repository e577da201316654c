#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attnlab/error.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/data/synthetic.h"
#include "nmt_test_util.h"

using namespace attnlab::nmt;
using namespace attnlab::nmt::testing;

namespace {

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool is_digits(const std::string& w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}

template <typename C>
bool has(const C& c, const std::string& w) {
  return std::find(c.begin(), c.end(), w) != c.end();
}

}  // namespace

TEST_CASE("synthetic split sizes whose sum wraps around are refused") {
  // A dev size of -5 cast to size_t: 10 + (2^64 - 5) wrapped to 5 pairs, and the train split read
  // ten (AddressSanitizer: heap-buffer-overflow).
  TempDir dir("synth_wrap");
  const std::size_t minus_five = static_cast<std::size_t>(-5);
  CHECK_THROWS_WITH_AS(write_synthetic_corpus(dir.path().string(), 10, minus_five, 0, 1),
                       doctest::Contains("synthetic corpus: 10 + 18446744073709551611 + 0 pairs do not fit a size"),
                       attnlab::Error);
  CHECK_THROWS_AS(write_synthetic_corpus(dir.path().string(), 10, 0, minus_five, 1), attnlab::Error);
}

TEST_CASE("the synthetic corpus is byte-identical for the same seed") {
  TempDir a("synth_a"), b("synth_b"), c("synth_c");
  write_synthetic_corpus(a.path().string(), 300, 20, 30, 7);
  write_synthetic_corpus(b.path().string(), 300, 20, 30, 7);
  write_synthetic_corpus(c.path().string(), 300, 20, 30, 8);
  for (const char* name : {"train.src", "train.tgt", "dev.src", "dev.tgt", "test.src", "test.tgt"}) {
    INFO(name);
    CHECK(read_bytes(a.file(name)) == read_bytes(b.file(name)));
    CHECK(read_bytes(a.file(name)) != read_bytes(c.file(name)));
  }
  const ParallelCorpus train = read_parallel(a.file("train.src"), a.file("train.tgt"));
  const ParallelCorpus dev = read_parallel(a.file("dev.src"), a.file("dev.tgt"));
  const ParallelCorpus test = read_parallel(a.file("test.src"), a.file("test.tgt"));
  CHECK(train.size() == 300);
  CHECK(dev.size() == 20);
  CHECK(test.size() == 30);
  // No source sentence is shared between splits.
  std::set<std::string> seen(train.src.begin(), train.src.end());
  for (const auto* split : {&dev, &test})
    for (const std::string& s : split->src) CHECK(seen.insert(s).second);
  // The files are the pairs generate_synthetic_pairs() gives for the same seed.
  const auto pairs = generate_synthetic_pairs(350, 7);
  CHECK(pairs[0].src == train.src[0]);
  CHECK(pairs[349].tgt == test.tgt[29]);
}

TEST_CASE("the synthetic corpus has the promised structure") {
  const auto pairs = generate_synthetic_pairs(2000, 3);
  const SyntheticLexicon& lex = synthetic_lexicon();
  CHECK(lex.source_words.size() >= 100);
  CHECK(lex.source_words.size() <= 200);
  std::set<std::string> src_vocab, tgt_vocab;
  std::size_t subordinate = 0, negated = 0, fronted = 0;
  for (const SyntheticPair& p : pairs) {
    INFO(p.src << " => " << p.tgt);
    const auto en = words(p.src);
    const auto de = words(p.tgt);
    REQUIRE(en.size() >= 4);
    REQUIRE(en.size() <= 15);
    src_vocab.insert(en.begin(), en.end());
    // Every word is in the lexicon; digits appear exactly as often as number words.
    std::size_t number_words = 0, digits = 0;
    for (const auto& w : en) {
      CHECK(has(lex.source_words, w));
      number_words += has(lex.number_words, w) ? 1 : 0;
    }
    for (const auto& w : de) {
      if (is_digits(w)) {
        ++digits;
      } else {
        CHECK(has(lex.target_words, w));
        tgt_vocab.insert(w);
      }
    }
    CHECK(digits == number_words);
    // A conjunction opens a verb-final clause: the target ends with a verb after ", conj".
    const bool has_conj = std::any_of(en.begin(), en.end(), [&](const auto& w) { return has(lex.conjunctions, w); });
    if (has_conj) {
      ++subordinate;
      CHECK(has(de, ","));
      CHECK(has(lex.target_verbs, de.back()));
    } else {
      CHECK_FALSE(has(de, ","));
    }
    // Negation: "not" in the source <=> "nicht" in the target, as often.
    CHECK(std::count(en.begin(), en.end(), "not") == std::count(de.begin(), de.end(), "nicht"));
    negated += has(en, "not") ? 1 : 0;
    // A fronted adverb puts the verb second (V2).
    if (en[0] == "today" || en[0] == "tomorrow" || en[0] == "now" || en[0] == "often" || en[0] == "here") {
      ++fronted;
      CHECK(has(lex.target_verbs, de[1]));
    }
  }
  CHECK(subordinate > 300);
  CHECK(negated > 300);
  CHECK(fronted > 300);
  CHECK(src_vocab.size() > 90);  // the sample uses most of the lexicon
  CHECK(tgt_vocab.size() > 100);
}

TEST_CASE("synthetic German agrees in gender and number and case") {
  struct Noun {
    char gender;
    std::string sg, pl;
  };
  const std::map<std::string, std::pair<Noun, bool>> nouns = {
      {"dog", {{'m', "Hund", "Hunde"}, false}},     {"dogs", {{'m', "Hund", "Hunde"}, true}},
      {"man", {{'m', "Mann", "Männer"}, false}},    {"men", {{'m', "Mann", "Männer"}, true}},
      {"cat", {{'f', "Katze", "Katzen"}, false}},   {"cats", {{'f', "Katze", "Katzen"}, true}},
      {"woman", {{'f', "Frau", "Frauen"}, false}},  {"women", {{'f', "Frau", "Frauen"}, true}},
      {"house", {{'n', "Haus", "Häuser"}, false}},  {"houses", {{'n', "Haus", "Häuser"}, true}},
      {"child", {{'n', "Kind", "Kinder"}, false}},  {"children", {{'n', "Kind", "Kinder"}, true}},
  };
  // The article German needs for (English determiner, gender, plural, accusative).
  auto article = [](const std::string& det, char gender, bool plural, bool acc) -> std::string {
    if (plural) return "die";
    if (det == "the") return gender == 'm' ? (acc ? "den" : "der") : gender == 'f' ? "die" : "das";
    return gender == 'm' ? (acc ? "einen" : "ein") : gender == 'f' ? "eine" : "ein";
  };
  const auto pairs = generate_synthetic_pairs(20000, 11);
  std::size_t checked = 0;
  std::set<std::string> articles_seen;
  for (const SyntheticPair& p : pairs) {
    const auto en = words(p.src);
    const auto de = words(p.tgt);
    // "DET NOUN VERB DET NOUN": simple clauses without adjectives, numbers, adverb or negation.
    if (en.size() != 5 || !nouns.count(en[1]) || !nouns.count(en[4])) continue;
    auto is_det = [](const std::string& w) { return w == "the" || w == "a" || w == "an"; };
    if (!is_det(en[0]) || !is_det(en[3])) continue;
    INFO(p.src << " => " << p.tgt);
    REQUIRE(de.size() == 5);
    const auto& [subj, subj_pl] = nouns.at(en[1]);
    const auto& [obj, obj_pl] = nouns.at(en[4]);
    CHECK(de[0] == article(en[0], subj.gender, subj_pl, false));
    CHECK(de[1] == (subj_pl ? subj.pl : subj.sg));
    CHECK(de[3] == article(en[3], obj.gender, obj_pl, true));
    CHECK(de[4] == (obj_pl ? obj.pl : obj.sg));
    // The verb agrees with the subject in both languages.
    CHECK((en[2].back() == 's') == !subj_pl);
    CHECK(de[2].ends_with("n") == subj_pl);
    articles_seen.insert(de[0]);
    articles_seen.insert(de[3]);
    ++checked;
  }
  CHECK(checked > 30);
  INFO(fmt::format("{}", fmt::join(articles_seen, " ")));
  CHECK(articles_seen.size() == 7);  // der die das den ein eine einen
}
