// The sacreBLEU tokenizers against sacreBLEU's own outputs, compound splitting, Python string helpers.
#include <doctest/doctest.h>

#include "attnlab/error.h"
#include "attnlab/nmt/metrics/bleu_tokenize.h"
#include "attnlab/nmt/metrics/unicode_text.h"
#include "bleu_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;

TEST_CASE("13a tokenizer reproduces every sacreBLEU tokenizer vector") {
  const auto vectors = testing::load_bleu_vectors("tokenizer_vectors.json");
  CHECK(vectors.size() >= 16);
  for (const auto& v : vectors) {
    const std::string input = v.at("input");
    INFO("input: [" << input << "]");
    CHECK(tokenize_13a(input) == v.at("tok_13a").get<std::string>());
  }
}

TEST_CASE("intl tokenizer reproduces every sacreBLEU tokenizer vector") {
  const auto vectors = testing::load_bleu_vectors("tokenizer_vectors.json");
  for (const auto& v : vectors) {
    const std::string input = v.at("input");
    INFO("input: [" << input << "]");
    CHECK(tokenize_intl(input) == v.at("tok_intl").get<std::string>());
  }
}

TEST_CASE("char and none tokenizers") {
  CHECK(tokenize_char("ab c") == "a b c");
  CHECK(tokenize_char("zahăr;") == "z a h ă r ;");
  CHECK(tokenize_char("") == "");
  CHECK(tokenize_none("a  b ,c") == "a  b ,c");
  CHECK(bleu_tokenize("Hello, world!", BleuTokenizer::kNone) == "Hello, world!");
  CHECK(bleu_tokenize("Hello, world!", BleuTokenizer::k13a) == "Hello , world !");
}

TEST_CASE("tokenizer names round trip and unknown names are refused") {
  for (auto t : {BleuTokenizer::k13a, BleuTokenizer::kIntl, BleuTokenizer::kChar, BleuTokenizer::kNone})
    CHECK(parse_bleu_tokenizer(bleu_tokenizer_name(t)) == t);
  try {
    parse_bleu_tokenizer("moses");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("moses") != std::string::npos);
    CHECK(std::string(e.what()).find("13a") != std::string::npos);
  }
}

TEST_CASE("compound splitting follows the tensor2tensor perl one-liner") {
  CHECK(compound_split("a-b") == "a ##AT##-##AT## b");
  CHECK(compound_split("the state-of-the-art system") ==
        "the state ##AT##-##AT## of ##AT##-##AT## the ##AT##-##AT## art system");
  // perl's s///g does not overlap matches: the b of a-b is used up, so b-c stays whole.
  CHECK(compound_split("a-b-c") == "a ##AT##-##AT## b-c");
  CHECK(compound_split("- a") == "- a");
  CHECK(compound_split("a - b") == "a - b");
  CHECK(compound_split("a -b c- d") == "a -b c- d");
  CHECK(compound_split("Nord-Süd-Gefälle") == "Nord ##AT##-##AT## Süd ##AT##-##AT## Gefälle");
  CHECK(compound_split("") == "");
}

TEST_CASE("Python string semantics: split rstrip lower") {
  CHECK(python_split_join("  a\tb\u00a0c\u3000d \n") == "a b c d");
  CHECK(python_split(" x  y ").size() == 2);
  CHECK(python_rstrip("ab \t\u2009") == "ab");
  CHECK(python_rstrip("   ") == "");
  CHECK(python_lower("ÄÖÜ Straße ABC") == "äöü straße abc");
  CHECK(python_lower("Producţia") == "producţia");
  CHECK(python_lower("\u0130") == "i\u0307");               // full mapping of U+0130
  CHECK(python_lower("ΟΔΟΣ ΣΑΣ Σ") == "οδος σας σ");        // final sigma only after a cased letter
  CHECK(python_lower("ΣΑΣ.") == "σας.");
}

TEST_CASE("invalid UTF-8 is reported with its byte offset") {
  try {
    check_utf8("ab\xff", "hypothesis line 3");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "hypothesis line 3: invalid UTF-8 at byte 2");
  }
  CHECK_NOTHROW(check_utf8("Grüße", "x"));
}
