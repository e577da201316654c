// sacreBLEU 2.x tokenizers (13a, intl, char, none) and tensor2tensor compound splitting.
#include "attnlab/nmt/metrics/bleu_tokenize.h"

#include <fmt/format.h>

#include "attnlab/error.h"
#include "attnlab/nmt/metrics/unicode_text.h"
#include "pcre2_util.h"

namespace attnlab::nmt {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation and symbols except ' - . , and the space itself
// (which the class contains but padding it changes nothing after the final split).
bool is_13a_symbol(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x7B && u <= 0x7E) || (u >= 0x5B && u <= 0x60) || (u >= 0x20 && u <= 0x26) ||
         (u >= 0x28 && u <= 0x2B) || (u >= 0x3A && u <= 0x40) || u == 0x2F;
}

// TokenizerRegexp's four re.sub passes. Each pass is a left-to-right scan with Python's
// non-overlapping match semantics. Working on bytes is exact: every character the patterns name
// is ASCII, and a UTF-8 multi-byte character never contains an ASCII byte, so "[^0-9]" matching
// the last byte of a multi-byte character gives the same output as matching the whole character.
std::string regexp_13a(const std::string& line) {
  std::string a;  // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
  a.reserve(line.size() * 2);
  for (char c : line) {
    if (is_13a_symbol(c)) {
      a.push_back(' ');
      a.push_back(c);
      a.push_back(' ');
    } else {
      a.push_back(c);
    }
  }
  std::string b;  // ([^0-9])([\.,]) -> "\1 \2 "
  b.reserve(a.size() * 2);
  for (std::size_t i = 0; i < a.size();) {
    if (!is_digit(a[i]) && i + 1 < a.size() && (a[i + 1] == '.' || a[i + 1] == ',')) {
      b.push_back(a[i]);
      b.push_back(' ');
      b.push_back(a[i + 1]);
      b.push_back(' ');
      i += 2;
    } else {
      b.push_back(a[i++]);
    }
  }
  std::string c;  // ([\.,])([^0-9]) -> " \1 \2"
  c.reserve(b.size() * 2);
  for (std::size_t i = 0; i < b.size();) {
    if ((b[i] == '.' || b[i] == ',') && i + 1 < b.size() && !is_digit(b[i + 1])) {
      c.push_back(' ');
      c.push_back(b[i]);
      c.push_back(' ');
      c.push_back(b[i + 1]);
      i += 2;
    } else {
      c.push_back(b[i++]);
    }
  }
  std::string d;  // ([0-9])(-) -> "\1 \2 "
  d.reserve(c.size() * 2);
  for (std::size_t i = 0; i < c.size();) {
    if (is_digit(c[i]) && i + 1 < c.size() && c[i + 1] == '-') {
      d.push_back(c[i]);
      d.push_back(' ');
      d.push_back('-');
      d.push_back(' ');
      i += 2;
    } else {
      d.push_back(c[i++]);
    }
  }
  return python_split_join(d);
}

}  // namespace

std::string_view bleu_tokenizer_name(BleuTokenizer tokenizer) { return kBleuTokenizers.name(tokenizer); }

BleuTokenizer parse_bleu_tokenizer(std::string_view name) { return kBleuTokenizers.parse(name); }

std::string tokenize_13a(std::string_view line) {
  std::string s(line);
  replace_all(s, "<skipped>", "");
  replace_all(s, "-\n", "");
  replace_all(s, "\n", " ");
  if (s.find('&') != std::string::npos) {
    replace_all(s, "&quot;", "\"");
    replace_all(s, "&amp;", "&");
    replace_all(s, "&lt;", "<");
    replace_all(s, "&gt;", ">");
  }
  return regexp_13a(" " + s + " ");
}

std::string tokenize_intl(std::string_view line) {
  static const Pcre2Pattern punct_after_non_digit(R"((\P{N})(\p{P}))");
  static const Pcre2Pattern punct_before_non_digit(R"((\p{P})(\P{N}))");
  static const Pcre2Pattern symbol(R"((\p{S}))");
  std::string s = punct_after_non_digit.substitute_all(line, "$1 $2 ");
  s = punct_before_non_digit.substitute_all(s, " $1 $2");
  s = symbol.substitute_all(s, " $1 ");
  return python_split_join(s);
}

std::string tokenize_char(std::string_view line) {
  // sacreBLEU joins every character with spaces; the n-gram split then drops the whitespace ones.
  std::string out;
  out.reserve(line.size() * 2);
  for (char32_t cp : utf8_decode(line)) {
    if (is_python_space(cp)) continue;
    if (!out.empty()) out.push_back(' ');
    utf8_append(out, cp);
  }
  return out;
}

std::string tokenize_none(std::string_view line) { return std::string(line); }

std::string bleu_tokenize(std::string_view line, BleuTokenizer tokenizer) {
  switch (tokenizer) {
    case BleuTokenizer::k13a: return tokenize_13a(line);
    case BleuTokenizer::kIntl: return tokenize_intl(line);
    case BleuTokenizer::kChar: return tokenize_char(line);
    case BleuTokenizer::kNone: return tokenize_none(line);
  }
  throw Error("bleu_tokenize: unknown tokenizer");
}

std::string compound_split(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  std::string out;
  out.reserve(text.size() + 16);
  std::size_t i = 0;
  while (i < text.size()) {
    if (i + 2 < text.size() && !is_space(text[i]) && text[i + 1] == '-' && !is_space(text[i + 2])) {
      out.push_back(text[i]);
      out.append(" ##AT##-##AT## ");
      out.push_back(text[i + 2]);
      i += 3;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

}  // namespace attnlab::nmt
