#pragma once
// What the harnesses share: the input as a file for readers that take a path, and the rule that
// decides what a finding is.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace attnlab::fuzz {

// A scratch folder for this process, made on first use and removed at exit.
const std::filesystem::path& scratch_dir();

// Writes `bytes` to scratch_dir()/name (the same file for every input of the process) and
// returns its path.
std::filesystem::path write_input(std::string_view name, std::string_view bytes);

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `body`; the errors a reader may throw for bad input (attnlab::Error and the rest of
// std::exception) are the expected outcome and swallowed. Anything else, crashes and sanitizer
// reports are findings.
template <typename Body>
void expect_errors(Body&& body) {
  try {
    body();
  } catch (const std::exception&) {
  }
}

}  // namespace attnlab::fuzz
