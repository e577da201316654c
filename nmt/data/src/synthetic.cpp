// Deterministic synthetic English -> German-like corpus (see synthetic.h for the grammar).
#include "attnlab/nmt/data/synthetic.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <string_view>
#include <unordered_set>

#include "attnlab/error.h"
#include "attnlab/nmt/io/file_util.h"

namespace attnlab::nmt {
namespace {

enum class Gender { m, f, n };
enum class Case { nom, acc };

struct Noun {
  std::string_view en_sg, en_pl, de_sg, de_pl;
  Gender gender;
};
struct Adjective {
  std::string_view en, de_stem;
};
struct Verb {
  std::string_view en_sg, en_pl, de_sg, de_pl;
};
struct Word {
  std::string_view en, de;
};

constexpr std::array<Noun, 22> kNouns = {{
    {"cat", "cats", "Katze", "Katzen", Gender::f},       {"dog", "dogs", "Hund", "Hunde", Gender::m},
    {"house", "houses", "Haus", "Häuser", Gender::n},    {"bird", "birds", "Vogel", "Vögel", Gender::m},
    {"child", "children", "Kind", "Kinder", Gender::n},  {"woman", "women", "Frau", "Frauen", Gender::f},
    {"man", "men", "Mann", "Männer", Gender::m},         {"horse", "horses", "Pferd", "Pferde", Gender::n},
    {"mouse", "mice", "Maus", "Mäuse", Gender::f},       {"tree", "trees", "Baum", "Bäume", Gender::m},
    {"flower", "flowers", "Blume", "Blumen", Gender::f}, {"book", "books", "Buch", "Bücher", Gender::n},
    {"car", "cars", "Auto", "Autos", Gender::n},         {"apple", "apples", "Apfel", "Äpfel", Gender::m},
    {"ball", "balls", "Ball", "Bälle", Gender::m},       {"boat", "boats", "Boot", "Boote", Gender::n},
    {"teacher", "teachers", "Lehrer", "Lehrer", Gender::m}, {"cow", "cows", "Kuh", "Kühe", Gender::f},
    {"table", "tables", "Tisch", "Tische", Gender::m},   {"window", "windows", "Fenster", "Fenster", Gender::n},
    {"lamp", "lamps", "Lampe", "Lampen", Gender::f},     {"girl", "girls", "Mädchen", "Mädchen", Gender::n},
}};

constexpr std::array<Adjective, 18> kAdjectives = {{
    {"red", "rot"},       {"small", "klein"},  {"big", "groß"},       {"old", "alt"},
    {"young", "jung"},    {"green", "grün"},   {"blue", "blau"},      {"fast", "schnell"},
    {"black", "schwarz"}, {"white", "weiß"},   {"new", "neu"},        {"brown", "braun"},
    {"yellow", "gelb"},   {"cold", "kalt"},    {"pretty", "hübsch"},  {"strong", "stark"},
    {"lazy", "faul"},     {"hungry", "hungrig"},
}};

constexpr std::array<Verb, 16> kVerbs = {{
    {"sees", "see", "sieht", "sehen"},          {"likes", "like", "mag", "mögen"},
    {"finds", "find", "findet", "finden"},      {"hears", "hear", "hört", "hören"},
    {"buys", "buy", "kauft", "kaufen"},         {"carries", "carry", "trägt", "tragen"},
    {"paints", "paint", "malt", "malen"},       {"visits", "visit", "besucht", "besuchen"},
    {"watches", "watch", "beobachtet", "beobachten"}, {"catches", "catch", "fängt", "fangen"},
    {"washes", "wash", "wäscht", "waschen"},    {"feeds", "feed", "füttert", "füttern"},
    {"knows", "know", "kennt", "kennen"},       {"loves", "love", "liebt", "lieben"},
    {"counts", "count", "zählt", "zählen"},     {"draws", "draw", "zeichnet", "zeichnen"},
}};

constexpr std::array<Word, 11> kNumbers = {{
    {"two", "2"}, {"three", "3"}, {"four", "4"}, {"five", "5"}, {"six", "6"}, {"seven", "7"},
    {"eight", "8"}, {"nine", "9"}, {"ten", "10"}, {"eleven", "11"}, {"twelve", "12"},
}};

constexpr std::array<Word, 5> kAdverbs = {{
    {"today", "heute"}, {"now", "jetzt"}, {"tomorrow", "morgen"}, {"often", "oft"}, {"here", "hier"},
}};

constexpr std::array<Word, 4> kConjunctions = {{
    {"because", "weil"}, {"when", "wenn"}, {"although", "obwohl"}, {"while", "während"},
}};

// Explicitly specified generator and draws, so every standard library produces the same corpus.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed ^ 0x73796E7468657469ULL) {}
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(engine_() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }

 private:
  std::mt19937_64 engine_;
};

using Words = std::vector<std::string>;

struct NounPhrase {
  Words en, de;
  bool plural = false;
};

NounPhrase noun_phrase(Rng& rng, Case grammatical_case) {
  const Noun& noun = kNouns[rng.below(kNouns.size())];
  NounPhrase np;
  np.plural = rng.chance(50);
  enum class Det { def, indef, number, def_number } det;
  if (!np.plural) {
    det = rng.chance(55) ? Det::def : Det::indef;
  } else {
    const std::size_t roll = rng.below(3);
    det = roll == 0 ? Det::def : roll == 1 ? Det::number : Det::def_number;
  }
  const std::size_t roll = rng.below(100);
  const std::size_t n_adj = roll < 45 ? 0 : roll < 85 ? 1 : 2;
  std::array<std::size_t, 2> adj{};
  adj[0] = rng.below(kAdjectives.size());
  do adj[1] = rng.below(kAdjectives.size());
  while (adj[1] == adj[0]);

  const bool acc = grammatical_case == Case::acc;
  std::string_view de_det, ending;
  const Word* number = nullptr;
  switch (det) {
    case Det::def:
    case Det::def_number:
      if (np.plural) {
        de_det = "die";
        ending = "en";
      } else {
        de_det = noun.gender == Gender::m ? (acc ? "den" : "der") : noun.gender == Gender::f ? "die" : "das";
        ending = (acc && noun.gender == Gender::m) ? "en" : "e";
      }
      np.en.push_back("the");
      break;
    case Det::indef:
      de_det = noun.gender == Gender::m ? (acc ? "einen" : "ein") : noun.gender == Gender::f ? "eine" : "ein";
      ending = noun.gender == Gender::m ? (acc ? "en" : "er") : noun.gender == Gender::f ? "e" : "es";
      np.en.push_back("a");
      break;
    case Det::number:
      ending = "e";  // strong plural, no article
      break;
  }
  if (det == Det::number || det == Det::def_number) {
    number = &kNumbers[rng.below(kNumbers.size())];
    np.en.emplace_back(number->en);
  }
  if (!de_det.empty()) np.de.emplace_back(de_det);
  if (number != nullptr) np.de.emplace_back(number->de);
  for (std::size_t k = 0; k < n_adj; ++k) {
    const Adjective& a = kAdjectives[adj[k]];
    np.en.emplace_back(a.en);
    np.de.push_back(std::string(a.de_stem) + std::string(ending));
  }
  np.en.emplace_back(np.plural ? noun.en_pl : noun.en_sg);
  np.de.emplace_back(np.plural ? noun.de_pl : noun.de_sg);
  if (np.en[0] == "a" && std::string_view("aeiou").find(np.en[1][0]) != std::string_view::npos) np.en[0] = "an";
  return np;
}

struct Clause {
  Words en, de;
};

// subject verb object, with optional negation; `subordinate` puts the German verb last.
Clause clause(Rng& rng, bool subordinate, std::string_view adverb_de) {
  NounPhrase subject = noun_phrase(rng, Case::nom);
  NounPhrase object = noun_phrase(rng, Case::acc);
  const Verb& verb = kVerbs[rng.below(kVerbs.size())];
  const bool negated = rng.chance(20);
  const std::string_view de_verb = subject.plural ? verb.de_pl : verb.de_sg;
  Clause c;
  c.en = subject.en;
  if (negated) {
    c.en.emplace_back(subject.plural ? "do" : "does");
    c.en.push_back("not");
    c.en.emplace_back(verb.en_pl);
  } else {
    c.en.emplace_back(subject.plural ? verb.en_pl : verb.en_sg);
  }
  c.en.insert(c.en.end(), object.en.begin(), object.en.end());

  if (subordinate) {  // conj S O [nicht] V
    c.de = subject.de;
    c.de.insert(c.de.end(), object.de.begin(), object.de.end());
    if (negated) c.de.push_back("nicht");
    c.de.emplace_back(de_verb);
  } else if (!adverb_de.empty()) {  // Adv V S O [nicht]
    c.de.emplace_back(adverb_de);
    c.de.emplace_back(de_verb);
    c.de.insert(c.de.end(), subject.de.begin(), subject.de.end());
    c.de.insert(c.de.end(), object.de.begin(), object.de.end());
    if (negated) c.de.push_back("nicht");
  } else {  // S V O [nicht]
    c.de = subject.de;
    c.de.emplace_back(de_verb);
    c.de.insert(c.de.end(), object.de.begin(), object.de.end());
    if (negated) c.de.push_back("nicht");
  }
  return c;
}

std::string join(const Words& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out.append(w);
  }
  return out;
}

SyntheticPair sentence(Rng& rng) {
  while (true) {
    Words en, de;
    std::string_view adverb_de;
    if (rng.chance(25)) {
      const Word& adverb = kAdverbs[rng.below(kAdverbs.size())];
      en.emplace_back(adverb.en);
      adverb_de = adverb.de;
    }
    Clause main = clause(rng, false, adverb_de);
    en.insert(en.end(), main.en.begin(), main.en.end());
    de.insert(de.end(), main.de.begin(), main.de.end());
    if (rng.chance(30)) {
      const Word& conj = kConjunctions[rng.below(kConjunctions.size())];
      Clause sub = clause(rng, true, {});
      en.emplace_back(conj.en);
      en.insert(en.end(), sub.en.begin(), sub.en.end());
      de.push_back(",");
      de.emplace_back(conj.de);
      de.insert(de.end(), sub.de.begin(), sub.de.end());
    }
    if (en.size() >= 4 && en.size() <= 15) return {join(en), join(de)};
  }
}

}  // namespace

std::vector<SyntheticPair> generate_synthetic_pairs(std::size_t count, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<SyntheticPair> pairs;
  pairs.reserve(count);
  std::unordered_set<std::string> seen;
  const std::size_t max_attempts = 100 * count + 10000;
  for (std::size_t attempt = 0; pairs.size() < count; ++attempt) {
    ATTNLAB_CHECK(attempt < max_attempts,
                  "generate_synthetic_pairs: found only {} unique sentences of the {} asked for", pairs.size(),
                  count);
    SyntheticPair pair = sentence(rng);
    if (seen.insert(pair.src).second) pairs.emplace_back(std::move(pair));
  }
  return pairs;
}

void write_synthetic_corpus(const std::string& out_dir, std::size_t train_pairs, std::size_t dev_pairs,
                            std::size_t test_pairs, std::uint64_t seed) {
  // (A sum that wraps around would generate fewer pairs than the splits then read.)
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  ATTNLAB_CHECK(dev_pairs <= kMax - train_pairs && test_pairs <= kMax - train_pairs - dev_pairs,
                "synthetic corpus: {} + {} + {} pairs do not fit a size (a negative size cast?)", train_pairs,
                dev_pairs, test_pairs);
  const std::vector<SyntheticPair> pairs = generate_synthetic_pairs(train_pairs + dev_pairs + test_pairs, seed);
  const std::array<std::pair<const char*, std::size_t>, 3> splits = {
      {{"train", train_pairs}, {"dev", dev_pairs}, {"test", test_pairs}}};
  std::size_t begin = 0;
  for (const auto& [name, n] : splits) {
    std::string src, tgt;
    for (std::size_t i = begin; i < begin + n; ++i) {
      src += pairs[i].src;
      src += '\n';
      tgt += pairs[i].tgt;
      tgt += '\n';
    }
    const std::filesystem::path dir(out_dir);
    detail::write_file_atomic((dir / (std::string(name) + ".src")).string(), src);
    detail::write_file_atomic((dir / (std::string(name) + ".tgt")).string(), tgt);
    begin += n;
  }
}

const SyntheticLexicon& synthetic_lexicon() {
  static const SyntheticLexicon lexicon = [] {
    SyntheticLexicon lex;
    std::set<std::string> src, tgt, verbs;
    for (const Noun& n : kNouns) {
      src.insert(std::string(n.en_sg)), src.insert(std::string(n.en_pl));
      tgt.insert(std::string(n.de_sg)), tgt.insert(std::string(n.de_pl));
    }
    for (const Adjective& a : kAdjectives) {
      src.insert(std::string(a.en));
      for (const char* ending : {"e", "en", "er", "es"}) tgt.insert(std::string(a.de_stem) + ending);
    }
    for (const Verb& v : kVerbs) {
      src.insert(std::string(v.en_sg)), src.insert(std::string(v.en_pl));
      verbs.insert(std::string(v.de_sg)), verbs.insert(std::string(v.de_pl));
    }
    tgt.insert(verbs.begin(), verbs.end());
    for (const Word& w : kNumbers) {
      src.insert(std::string(w.en));
      lex.number_words.emplace_back(w.en);
    }
    for (const Word& w : kAdverbs) src.insert(std::string(w.en)), tgt.insert(std::string(w.de));
    for (const Word& w : kConjunctions) {
      src.insert(std::string(w.en)), tgt.insert(std::string(w.de));
      lex.conjunctions.emplace_back(w.en);
    }
    for (const char* w : {"the", "a", "an", "does", "do", "not"}) src.insert(w);
    for (const char* w : {"der", "die", "das", "den", "ein", "eine", "einen", "nicht", ","}) tgt.insert(w);
    lex.source_words.assign(src.begin(), src.end());
    lex.target_words.assign(tgt.begin(), tgt.end());
    lex.target_verbs.assign(verbs.begin(), verbs.end());
    return lex;
  }();
  return lexicon;
}

}  // namespace attnlab::nmt
