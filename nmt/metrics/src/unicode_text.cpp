// UTF-8 helpers with Python str semantics (split, rstrip, lower) for the BLEU / chrF scorers.
#include "attnlab/nmt/metrics/unicode_text.h"

#include <clocale>
#include <cwctype>
#include <locale.h>

#include <fmt/format.h>

#include "attnlab/error.h"
#include "pcre2_util.h"

namespace attnlab::nmt {
namespace {

// Decodes the code point at text[i] (valid UTF-8 assumed unless `ok` is given); advances i.
char32_t decode_at(std::string_view text, std::size_t& i, bool* ok = nullptr) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  auto fail = [&]() -> char32_t {
    if (ok) *ok = false;
    ++i;
    return 0xFFFD;
  };
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  std::size_t len = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) len = 2, cp = b0 & 0x1F;
  else if ((b0 & 0xF0) == 0xE0) len = 3, cp = b0 & 0x0F;
  else if ((b0 & 0xF8) == 0xF0) len = 4, cp = b0 & 0x07;
  else return fail();
  if (i + len > text.size()) return fail();
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xC0) != 0x80) return fail();
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fail();
  i += len;
  return cp;
}

// The LC_CTYPE of C.UTF-8 (glibc's built-in Unicode tables) for towlower_l / towupper_l.
locale_t utf8_ctype() {
  static const locale_t loc = [] {
    for (const char* name : {"C.UTF-8", "C.utf8", "en_US.UTF-8"}) {
      if (locale_t l = newlocale(LC_CTYPE_MASK, name, static_cast<locale_t>(nullptr))) return l;
    }
    return static_cast<locale_t>(nullptr);
  }();
  if (!loc) throw Error("lowercasing needs a UTF-8 locale (C.UTF-8) for Unicode case tables; none is installed");
  return loc;
}

char32_t simple_lower(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return static_cast<char32_t>(towlower_l(static_cast<wint_t>(cp), utf8_ctype()));
}

bool is_cased(char32_t cp) {
  static const Pcre2Pattern cased(R"(^[\p{Ll}\p{Lu}\p{Lt}])");
  std::string s;
  utf8_append(s, cp);
  return cased.matches(s) || simple_lower(cp) != cp ||
         static_cast<char32_t>(towupper_l(static_cast<wint_t>(cp), utf8_ctype())) != cp;
}

// Unicode Case_Ignorable: Mn Me Cf Lm Sk, and Word_Break MidLetter / MidNumLet / Single_Quote.
bool is_case_ignorable(char32_t cp) {
  switch (cp) {
    case 0x27: case 0x2E: case 0x3A: case 0xB7: case 0x387: case 0x55F: case 0x5F4: case 0x2018:
    case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55: case 0xFF07:
    case 0xFF0E: case 0xFF1A:
      return true;
    default:
      break;
  }
  static const Pcre2Pattern ignorable(R"(^[\p{Mn}\p{Me}\p{Cf}\p{Lm}\p{Sk}])");
  std::string s;
  utf8_append(s, cp);
  return ignorable.matches(s);
}

// CPython's handle_capital_sigma: U+03A3 lowercases to final sigma U+03C2 after a cased letter
// (case-ignorables skipped) when no cased letter follows.
char32_t lower_sigma(const std::u32string& cps, std::size_t i) {
  std::size_t j = i;
  char32_t c = 0;
  bool found = false;
  while (j > 0) {
    c = cps[--j];
    if (!is_case_ignorable(c)) {
      found = true;
      break;
    }
  }
  bool final_sigma = found && is_cased(c);
  if (final_sigma && i + 1 < cps.size()) {
    std::size_t k = i + 1;
    for (; k < cps.size(); ++k) {
      if (!is_case_ignorable(cps[k])) break;
    }
    final_sigma = k == cps.size() || !is_cased(cps[k]);
  }
  return final_sigma ? 0x3C2 : 0x3C3;
}

}  // namespace

void check_utf8(std::string_view text, std::string_view what) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t at = i;
    bool ok = true;
    decode_at(text, i, &ok);
    if (!ok) throw Error(fmt::format("{}: invalid UTF-8 at byte {}", what, at));
  }
}

bool is_python_space(char32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::vector<std::string_view> python_split(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0, start = 0;
  bool in_token = false;
  while (i < text.size()) {
    const std::size_t at = i;
    const char32_t cp = decode_at(text, i);
    if (is_python_space(cp)) {
      if (in_token) out.push_back(text.substr(start, at - start));
      in_token = false;
    } else if (!in_token) {
      in_token = true;
      start = at;
    }
  }
  if (in_token) out.push_back(text.substr(start));
  return out;
}

std::string python_split_join(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::string_view token : python_split(text)) {
    if (!out.empty()) out.push_back(' ');
    out.append(token);
  }
  return out;
}

std::string_view python_rstrip(std::string_view text) {
  std::size_t end = 0, i = 0;
  while (i < text.size()) {
    const char32_t cp = decode_at(text, i);
    if (!is_python_space(cp)) end = i;
  }
  return text.substr(0, end);
}

std::string python_lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) {
    for (char c : text) out.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c);
    return out;
  }
  const std::u32string cps = utf8_decode(text);
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const char32_t cp = cps[i];
    if (cp == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: the one unconditional full mapping
      out.push_back('i');
      utf8_append(out, 0x307);
    } else if (cp == 0x3A3) {
      utf8_append(out, lower_sigma(cps, i));
    } else {
      utf8_append(out, simple_lower(cp));
    }
  }
  return out;
}

std::u32string utf8_decode(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) out.push_back(decode_at(text, i));
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace attnlab::nmt
