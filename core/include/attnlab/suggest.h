#pragma once
// "Did you mean": the closest of a list of valid names to a misspelt one, for error messages.
#include <string>
#include <vector>

namespace attnlab {

// The closest of `candidates` to `word` (by edit distance) when it is a plausible typo, else empty.
std::string suggest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace attnlab
