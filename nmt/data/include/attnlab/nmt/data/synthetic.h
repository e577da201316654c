#pragma once
// A deterministic synthetic English -> "German" corpus with real structure, small enough to learn
// on two CPU cores (the README's default run) and hard enough that a model needs attention:
//   - a small lexicon (about 100 source words): nouns, adjectives, verbs, number words
//     (two .. twelve), adverbs, conjunctions;
//   - number words become digits ("three" -> "3");
//   - German nouns have gender (der / die / das) and irregular plurals; determiners and adjective
//     endings agree in gender, number and case (subject nominative, object accusative), e.g.
//     "a small dog" -> "ein kleiner Hund" as subject, "einen kleinen Hund" as object;
//   - verbs agree in number with their subject ("sieht" / "sehen");
//   - word order changes: a fronted adverb inverts verb and subject (V2: "heute sieht die Katze
//     ..."), a subordinate clause after "because / when / although" puts its verb last ("..., weil
//     der Hund die Katze sieht"), and negation "does not V" becomes "V ... nicht" at the clause end.
// Source: 4-15 lowercase words; target: German words, digits and a comma, space-separated.
// Every source sentence is unique across all splits. Same seed => same pairs, byte for byte.
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::nmt {

struct SyntheticPair {
  std::string src;
  std::string tgt;
};

// `count` pairs, unique sources. Throws attnlab::Error if so many unique sentences cannot be found.
std::vector<SyntheticPair> generate_synthetic_pairs(std::size_t count, std::uint64_t seed);

// Writes out_dir/{train,dev,test}.{src,tgt} (one pair per line, LF endings, files written
// atomically; out_dir is created). The three splits share no source sentence.
void write_synthetic_corpus(const std::string& out_dir, std::size_t train_pairs, std::size_t dev_pairs,
                            std::size_t test_pairs, std::uint64_t seed);

// The word lists, for tests and documentation.
struct SyntheticLexicon {
  std::vector<std::string> source_words;  // every word a source sentence may contain
  std::vector<std::string> target_words;  // every target token (digits excluded)
  std::vector<std::string> number_words;  // "two" .. "twelve" (-> "2" .. "12")
  std::vector<std::string> conjunctions;  // source words that open a verb-final clause
  std::vector<std::string> target_verbs;  // every German verb form
};
const SyntheticLexicon& synthetic_lexicon();

}  // namespace attnlab::nmt
