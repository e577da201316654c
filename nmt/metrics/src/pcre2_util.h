#pragma once
// A compiled PCRE2 pattern (UTF + UCP: \p{..} and \d etc. follow Unicode properties), JIT-compiled
// when the library supports it. Immutable after construction, so one instance serves every thread.
#include <string>
#include <string_view>

namespace attnlab::nmt {

class Pcre2Pattern {
 public:
  explicit Pcre2Pattern(std::string_view pattern);
  ~Pcre2Pattern();
  Pcre2Pattern(const Pcre2Pattern&) = delete;
  Pcre2Pattern& operator=(const Pcre2Pattern&) = delete;

  // Whether the pattern matches somewhere in `subject` (valid UTF-8).
  bool matches(std::string_view subject) const;
  // Python's re.sub(pattern, replacement, subject): every non-overlapping match, left to right.
  // `replacement` uses PCRE2 syntax ($1, $2).
  std::string substitute_all(std::string_view subject, std::string_view replacement) const;

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace attnlab::nmt
