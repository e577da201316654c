// PCRE2 wrapper: compile once (UTF, UCP, JIT), match and substitute globally.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "pcre2_util.h"

#include <pcre2.h>

#include <fmt/format.h>

#include "attnlab/error.h"

namespace attnlab::nmt {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0) return fmt::format("PCRE2 error {}", code);
  return reinterpret_cast<const char*>(buffer);
}

PCRE2_SPTR subject_ptr(std::string_view s) {
  static const char kEmpty[] = "";
  return reinterpret_cast<PCRE2_SPTR>(s.empty() ? kEmpty : s.data());
}

}  // namespace

Pcre2Pattern::Pcre2Pattern(std::string_view pattern) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code)
    throw Error(fmt::format("PCRE2 cannot compile '{}' at offset {}: {}", pattern_, offset, pcre2_message(error)));
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: the interpreter is used when JIT is missing
  code_ = code;
}

Pcre2Pattern::~Pcre2Pattern() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Pcre2Pattern::matches(std::string_view subject) const {
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  if (!md) throw Error("PCRE2: out of memory");
  const int rc = pcre2_match(code, subject_ptr(subject), subject.size(), 0, 0, md, nullptr);
  pcre2_match_data_free(md);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) throw Error(fmt::format("PCRE2 match of '{}' failed: {}", pattern_, pcre2_message(rc)));
  return true;
}

std::string Pcre2Pattern::substitute_all(std::string_view subject, std::string_view replacement) const {
  auto* code = static_cast<pcre2_code*>(code_);
  std::string out(subject.size() * 2 + 64, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    PCRE2_SIZE length = out.size();
    const int rc = pcre2_substitute(
        code, subject_ptr(subject), subject.size(), 0, PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH,
        nullptr, nullptr, reinterpret_cast<PCRE2_SPTR>(replacement.data()), replacement.size(),
        reinterpret_cast<PCRE2_UCHAR*>(out.data()), &length);
    if (rc >= 0) {
      out.resize(length);
      return out;
    }
    if (rc != PCRE2_ERROR_NOMEMORY)
      throw Error(fmt::format("PCRE2 substitution of '{}' failed: {}", pattern_, pcre2_message(rc)));
    out.assign(length + 1, '\0');  // `length` now holds the size needed
  }
  throw Error(fmt::format("PCRE2 substitution of '{}' did not fit its output", pattern_));
}

}  // namespace attnlab::nmt
