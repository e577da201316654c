#include "attnlab/nmt/io/write_faults.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/core.h>

#include "attnlab/env.h"
#include "attnlab/error.h"

namespace attnlab::nmt {
namespace {

struct NamedErrno {
  std::string_view name;
  int value;
};
constexpr NamedErrno kInjectable[] = {
    {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EIO", EIO}, {"EROFS", EROFS}, {"EACCES", EACCES}};

}  // namespace

std::optional<int> injected_write_error(const std::filesystem::path& target, std::size_t bytes_after) {
  const std::optional<std::string> spec = env::value("ATTNLAB_FAULT_WRITE");
  if (!spec) return std::nullopt;
  const std::string_view text(*spec);
  const std::size_t colon = text.find(':');
  ATTNLAB_CHECK(colon != std::string_view::npos && colon > 0,
                "ATTNLAB_FAULT_WRITE='{}': expected PATTERN:ERROR[:BYTES], e.g. step-00000080:ENOSPC", text);
  const std::string_view pattern = text.substr(0, colon);
  std::string_view rest = text.substr(colon + 1);
  std::size_t after = 0;
  if (const std::size_t c = rest.find(':'); c != std::string_view::npos) {
    const std::string bytes(rest.substr(c + 1));
    char* end = nullptr;
    after = std::strtoull(bytes.c_str(), &end, 10);
    ATTNLAB_CHECK(!bytes.empty() && end && *end == '\0', "ATTNLAB_FAULT_WRITE='{}': BYTES must be a whole number",
                  text);
    rest = rest.substr(0, c);
  }
  int error = 0;
  for (const auto& e : kInjectable)
    if (e.name == rest) error = e.value;
  ATTNLAB_CHECK(error != 0, "ATTNLAB_FAULT_WRITE='{}': ERROR must be ENOSPC, EDQUOT, EIO, EROFS or EACCES", text);
  if (target.filename().string().find(pattern) == std::string::npos) return std::nullopt;
  if (bytes_after <= after) return std::nullopt;
  return error;
}

std::string describe_errno(int error) {
  const char* name = ::strerrorname_np(error);
  return fmt::format("{} ({}, errno {})", std::strerror(error), name ? name : "?", error);
}

}  // namespace attnlab::nmt
