#pragma once
// The BLEU tokenizers of sacreBLEU 2.x, reproduced exactly, and tensor2tensor's compound splitting.
//
//   13a   Tokenizer13a: drop "<skipped>", join "-\n", "\n" -> " ", unescape &quot; &amp; &lt; &gt;,
//         then the mteval-v13a regexes of TokenizerRegexp (the default of sacreBLEU and WMT)
//   intl  TokenizerV14International: split punctuation \p{P} next to a non-digit \P{N}, and every
//         symbol \p{S} (Unicode properties through PCRE2); no unescaping
//   char  every non-whitespace character is a token
//   none  the text as it is (already tokenized input: multi-bleu style "tokenized BLEU")
//
// Every tokenizer returns its tokens joined by single ASCII spaces.
#include <string>
#include <string_view>

#include "attnlab/name_table.h"

namespace attnlab::nmt {

enum class BleuTokenizer { k13a, kIntl, kChar, kNone };
// The names sacreBLEU's --tokenize and signature use.
inline constexpr auto kBleuTokenizers = name_table<BleuTokenizer>("BLEU tokenizer", {{BleuTokenizer::k13a, "13a"},
                                                                                    {BleuTokenizer::kIntl, "intl"},
                                                                                    {BleuTokenizer::kChar, "char"},
                                                                                    {BleuTokenizer::kNone, "none"}});

std::string_view bleu_tokenizer_name(BleuTokenizer tokenizer);
// Inverse of bleu_tokenizer_name; throws attnlab::Error listing the known names.
BleuTokenizer parse_bleu_tokenizer(std::string_view name);

std::string tokenize_13a(std::string_view line);
std::string tokenize_intl(std::string_view line);
std::string tokenize_char(std::string_view line);
std::string tokenize_none(std::string_view line);
std::string bleu_tokenize(std::string_view line, BleuTokenizer tokenizer);

// tensor2tensor's get_ende_bleu.sh compound splitting of tokenized text, the perl one-liner
// s{(\S)-(\S)}{$1 ##AT##-##AT## $2}g: "a-b" -> "a ##AT##-##AT## b". Matches do not overlap,
// exactly as in perl, so "a-b-c" -> "a ##AT##-##AT## b-c".
std::string compound_split(std::string_view tokenized);

}  // namespace attnlab::nmt
