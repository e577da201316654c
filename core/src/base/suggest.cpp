#include "attnlab/suggest.h"

#include <algorithm>

namespace attnlab {
namespace {

// Edits (insert, delete, substitute, or swap two neighbours) that turn a into b: the optimal
// string alignment distance, in which a swapped pair ("trian") is one typo, not two.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string suggest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  // A typo per three characters, at least one: "fp16" is not a typo of "fp32".
  std::size_t best_distance = std::max<std::size_t>(1, (word.size() + 1) / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string hint = suggest(word, candidates);
  return hint.empty() ? std::string() : "; did you mean '" + hint + "'?";
}

}  // namespace attnlab
