#pragma once
// "Did you mean": the closest of a list of valid names to a misspelt one, for error messages.
#include <string>
#include <vector>

namespace attnlab {

// The closest of `candidates` to `word` (by edit distance) when it is a plausible typo, else empty.
std::string suggest(const std::string& word, const std::vector<std::string>& candidates);
// The one wording of a suggestion at the end of a message: "; did you mean 'x'?" for suggest()'s
// name, empty when it has none.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace attnlab
