#include "memory/memory_limit.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "attnlab/env.h"
#include "attnlab/error.h"

namespace attnlab {

std::size_t parse_memory_size(std::string_view text, std::string_view what) {
  const auto fail = [&]() -> std::size_t {
    throw Error(fmt::format("{}: expected a memory size such as 8GiB, 512MiB or 20GB (or bytes), got '{}'", what,
                            text));
  };
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || rest == text.data()) return fail();
  std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  if (unit.starts_with(' ')) unit.remove_prefix(1);
  static constexpr std::array<std::pair<std::string_view, double>, 9> kUnits = {{{"", 1.0},
                                                                                 {"KiB", 1024.0},
                                                                                 {"MiB", 1024.0 * 1024},
                                                                                 {"GiB", 1024.0 * 1024 * 1024},
                                                                                 {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                                                                 {"KB", 1e3},
                                                                                 {"MB", 1e6},
                                                                                 {"GB", 1e9},
                                                                                 {"TB", 1e12}}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::floor(value * scale);
    // Below 2^63, so that the conversion is exact in range.
    if (!(bytes >= 1.0 && bytes < 9.2e18)) return fail();
    return static_cast<std::size_t>(bytes);
  }
  return fail();
}

std::size_t cuda_memory_limit_from_env() {
  const std::optional<std::string> v = env::value(kCudaMemoryLimitVariable);
  return v ? parse_memory_size(*v, kCudaMemoryLimitVariable) : 0;
}

}  // namespace attnlab
