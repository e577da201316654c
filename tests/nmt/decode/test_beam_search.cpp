#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>

#include "attnlab/autograd.h"
#include "attnlab/nmt/decode/beam_search.h"
#include "attnlab/nmt/decode/translator.h"
#include "attnlab/ops.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

constexpr std::int64_t kBos = 2, kEos = 3, kA = 4, kB = 5, kV = 6;

// A model whose next-token distribution is a hand-written function of the prefix.
class TableModel final : public StepModel {
 public:
  using Table = std::function<std::map<std::int64_t, double>(const std::vector<std::int64_t>&)>;
  TableModel(Table table, std::size_t rows) : table_(std::move(table)), prefixes_(rows) {}
  Tensor next_log_probs(const std::vector<std::int64_t>& last) override {
    REQUIRE(last.size() == prefixes_.size());
    std::vector<double> lp(last.size() * kV, std::log(1e-12));
    for (std::size_t r = 0; r < last.size(); ++r) {
      if (last[r] != kBos) prefixes_[r].push_back(last[r]);
      for (const auto& [token, p] : table_(prefixes_[r])) lp[r * kV + static_cast<std::size_t>(token)] = std::log(p);
    }
    ++calls;
    return Tensor::from_vector<double>({static_cast<std::int64_t>(last.size()), kV}, lp);
  }
  void reorder(const std::vector<std::int64_t>& rows) override {
    std::vector<std::vector<std::int64_t>> next;
    for (auto r : rows) next.push_back(prefixes_[static_cast<std::size_t>(r)]);
    prefixes_ = std::move(next);
  }
  int calls = 0;

 private:
  Table table_;
  std::vector<std::vector<std::int64_t>> prefixes_;
};

// Greedy: "a" looks best first, but "b eos" (0.4 * 0.9 = 0.36) beats every path through "a".
std::map<std::int64_t, double> garden_path(const std::vector<std::int64_t>& prefix) {
  if (prefix.empty()) return {{kA, 0.6}, {kB, 0.4}};
  if (prefix == std::vector<std::int64_t>{kA}) return {{kEos, 0.3}, {kA, 0.35}, {kB, 0.35}};
  if (prefix == std::vector<std::int64_t>{kB}) return {{kEos, 0.9}, {kA, 0.1}};
  if (prefix.size() == 2 && prefix[0] == kA) return {{kEos, 0.5}, {kA, 0.5}};
  return {{kEos, 1.0}};
}

// An immediate eos (p 0.5) against "a a a a a eos" (p 0.5 * 0.95^4 * 0.99 = 0.403): the short
// one wins on log-probability, the long one once the length penalty is on.
std::map<std::int64_t, double> long_or_short(const std::vector<std::int64_t>& prefix) {
  if (prefix.empty()) return {{kEos, 0.5}, {kA, 0.5}};
  if (prefix.size() < 5) return {{kA, 0.95}, {kB, 0.04}, {kEos, 0.01}};
  return {{kEos, 0.99}, {kA, 0.01}};
}

std::vector<std::int64_t> best(StepModel& model, std::int64_t beam, double alpha, std::int64_t src_len = 10) {
  auto out = beam_search(model, {src_len}, kBos, kEos, {.beam = beam, .alpha = alpha, .max_length_offset = 50, .n_best = 1});
  REQUIRE(out.size() == 1);
  REQUIRE_FALSE(out[0].empty());
  return out[0][0].tokens;
}

}  // namespace

TEST_CASE("beam search finds the known best hypothesis that greedy misses") {
  TableModel greedy(garden_path, 1), wide(garden_path, 2);
  CHECK(best(greedy, 1, 0.0) == std::vector<std::int64_t>{kA, kA, kEos});
  auto hyps = beam_search(wide, {10}, kBos, kEos, {.beam = 2, .alpha = 0.0, .max_length_offset = 50, .n_best = 2});
  REQUIRE(hyps[0].size() >= 1);
  CHECK(hyps[0][0].tokens == std::vector<std::int64_t>{kB, kEos});
  CHECK(hyps[0][0].log_prob == doctest::Approx(std::log(0.36)));
  // Nothing alive could beat 0.36 after step 2: the search stopped without running to the limit.
  CHECK(wide.calls == 2);
}

TEST_CASE("the length penalty changes the choice in a constructed case") {
  TableModel plain(long_or_short, 2), penalized(long_or_short, 2);
  CHECK(best(plain, 2, 0.0) == std::vector<std::int64_t>{kEos});
  CHECK(best(penalized, 2, 1.0) == std::vector<std::int64_t>{kA, kA, kA, kA, kA, kEos});
  CHECK(length_penalty(6, 1.0) == doctest::Approx(11.0 / 6.0));
  CHECK(length_penalty(6, 0.6) == doctest::Approx(std::pow(11.0 / 6.0, 0.6)));
}

TEST_CASE("the output stops at the source length plus the offset") {
  auto never_ends = [](const std::vector<std::int64_t>&) {
    return std::map<std::int64_t, double>{{kA, 0.5}, {kB, 0.4999}, {kEos, 1e-4}};
  };
  TableModel model(never_ends, 2);
  auto out = beam_search(model, {4}, kBos, kEos, {.beam = 2, .alpha = 0.6, .max_length_offset = 2, .n_best = 1});
  REQUIRE(out[0][0].tokens.size() == 7);  // 4 + 2 tokens, then the forced eos
  CHECK(out[0][0].tokens.back() == kEos);
  CHECK_THROWS_WITH_AS(beam_search(model, {4}, kBos, kEos, {.beam = 2, .alpha = 0.6, .max_length_offset = 2, .n_best = 3}),
                       doctest::Contains("1 <= n_best <= beam"), Error);
}

namespace {

Transformer& tiny_model() {
  static Generator init(21), drop(22);
  static Transformer model(nmt::testing::tiny_config(11), nmt::testing::plugins(), init, drop);
  model.eval();
  return model;
}

// Greedy decoding written out independently: full (non-incremental) decoding of the prefix at
// every step, arg-max over the tokens a translation may contain, stop at eos or at the limit.
std::vector<std::int64_t> reference_greedy(Transformer& model, const std::vector<std::int32_t>& src, std::int64_t limit) {
  NoGradGuard no_grad;
  std::vector<std::int64_t> s(src.begin(), src.end()), prefix{kBos}, out;
  Tensor src_t = Tensor::from_vector<std::int64_t>({1, static_cast<std::int64_t>(s.size())}, s);
  while (static_cast<std::int64_t>(out.size()) < limit) {
    Tensor logits = model.forward(src_t, Tensor::from_vector<std::int64_t>({1, static_cast<std::int64_t>(prefix.size())}, prefix));
    const auto v = logits.to_vector<double>();
    const std::size_t base = (prefix.size() - 1) * 11;
    std::int64_t arg = kEos;  // padding (0) and bos (2) are never produced
    for (std::int64_t w = 1; w < 11; ++w)
      if (w != kBos && v[base + static_cast<std::size_t>(w)] > v[base + static_cast<std::size_t>(arg)]) arg = w;
    if (arg == kEos) break;
    out.push_back(arg);
    prefix.push_back(arg);
  }
  return out;
}

}  // namespace

TEST_CASE("beam 1 on a transformer equals independent greedy decoding") {
  Transformer& model = tiny_model();
  const std::vector<std::vector<std::int32_t>> sources = {{4, 5, 6}, {7, 8, 9, 10, 4}, {6}};
  const auto decoded = translate_ids(model, sources, {.beam = 1, .alpha = 0.6, .max_length_offset = 5, .n_best = 1}, 4096,
                                     Device::cpu());
  for (std::size_t i = 0; i < sources.size(); ++i)
    CHECK(decoded[i] == reference_greedy(model, sources[i], static_cast<std::int64_t>(sources[i].size()) + 5));
}

TEST_CASE("batched beam search gives the same output as one sentence at a time") {
  Transformer& model = tiny_model();
  const std::vector<std::vector<std::int32_t>> sources = {{4, 5, 6}, {7, 8, 9, 10, 4, 5, 6}, {6}, {9, 9, 8, 7}, {5, 4}};
  const BeamOptions options{.beam = 4, .alpha = 0.6, .max_length_offset = 6, .n_best = 1};
  const auto batched = translate_ids(model, sources, options, 4096, Device::cpu());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const auto alone = translate_ids(model, {sources[i]}, options, 4096, Device::cpu());
    CHECK(batched[i] == alone[0]);
    CHECK(static_cast<std::int64_t>(batched[i].size()) <= static_cast<std::int64_t>(sources[i].size()) + 6);
  }
}
