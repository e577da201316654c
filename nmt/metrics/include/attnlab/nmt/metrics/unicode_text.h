#pragma once
// UTF-8 text helpers that behave exactly like the Python str methods sacreBLEU relies on:
// str.split() / str.rstrip() (Unicode whitespace) and str.lower() (full Unicode lowercasing,
// including U+0130 and the final-sigma rule). Used by the BLEU and chrF scorers.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::nmt {

// Throws attnlab::Error naming `what` and the byte offset when `text` is not valid UTF-8.
void check_utf8(std::string_view text, std::string_view what);

// Python's str.isspace() for one code point.
bool is_python_space(char32_t cp);

// Python's str.split() with no argument: the non-whitespace runs of `text` (views into it).
std::vector<std::string_view> python_split(std::string_view text);

// Python's ' '.join(text.split()): the runs joined by single ASCII spaces.
std::string python_split_join(std::string_view text);

// Python's str.rstrip() with no argument.
std::string_view python_rstrip(std::string_view text);

// Python's str.lower() (valid UTF-8 in, UTF-8 out).
std::string python_lower(std::string_view text);

// The code points of valid UTF-8 text, and back.
std::u32string utf8_decode(std::string_view text);
void utf8_append(std::string& out, char32_t cp);

}  // namespace attnlab::nmt
