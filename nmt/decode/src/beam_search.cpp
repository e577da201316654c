#include "attnlab/nmt/decode/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnlab/error.h"

namespace attnlab::nmt {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Live {
  std::vector<std::int64_t> tokens;
  double log_prob = 0.0;
};

struct Sentence {
  std::vector<Live> beams;             // `beam` entries; -inf log_prob marks an empty slot
  std::vector<Hypothesis> finished;
  std::int64_t max_length = 1;
  bool done = false;
};

struct Candidate {
  double log_prob;
  std::int64_t beam;
  std::int64_t token;
};

}  // namespace

double length_penalty(std::int64_t length, double alpha) {
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

std::vector<std::vector<Hypothesis>> beam_search(StepModel& model, const std::vector<std::int64_t>& source_lengths,
                                                 std::int64_t bos, std::int64_t eos, const BeamOptions& o) {
  ATTNLAB_CHECK(o.beam >= 1 && o.n_best >= 1 && o.n_best <= o.beam && o.alpha >= 0.0 && o.max_length_offset >= 0,
                "beam search: need beam >= 1, 1 <= n_best <= beam, alpha >= 0, max_length_offset >= 0 "
                "(got beam {}, n_best {}, alpha {}, offset {})",
                o.beam, o.n_best, o.alpha, o.max_length_offset);
  const std::int64_t beam = o.beam;
  std::vector<Sentence> sentences(source_lengths.size());
  for (std::size_t s = 0; s < sentences.size(); ++s) {
    sentences[s].beams.assign(static_cast<std::size_t>(beam), Live{{}, kNegInf});
    sentences[s].beams[0].log_prob = 0.0;  // identical start rows: only one may expand
    sentences[s].max_length = source_lengths[s] + o.max_length_offset;  // tokens before eos
  }
  std::vector<std::size_t> live(sentences.size());  // sentence of each live block of rows
  for (std::size_t s = 0; s < live.size(); ++s) live[s] = s;

  for (std::int64_t t = 1; !live.empty(); ++t) {
    std::vector<std::int64_t> last;
    for (std::size_t s : live)
      for (const Live& b : sentences[s].beams) last.push_back(b.tokens.empty() ? bos : b.tokens.back());
    const Tensor log_probs = model.next_log_probs(last);
    ATTNLAB_CHECK(log_probs.rank() == 2 && log_probs.dim(0) == static_cast<std::int64_t>(last.size()),
                  "beam search: the model returned {} for {} rows", log_probs.shape().str(), last.size());
    const std::int64_t vocab = log_probs.dim(1);
    std::vector<double> lp = log_probs.to_vector<double>();
    for (std::int64_t token : o.forbidden)
      ATTNLAB_CHECK(token >= 0 && token < vocab, "beam search: forbidden token {} is outside the vocabulary of {}", token, vocab);
    for (std::size_t r = 0; r < last.size(); ++r)
      for (std::int64_t token : o.forbidden) lp[r * static_cast<std::size_t>(vocab) + static_cast<std::size_t>(token)] = kNegInf;

    std::vector<std::int64_t> keep_rows;
    std::vector<std::size_t> still_live;
    for (std::size_t i = 0; i < live.size(); ++i) {
      Sentence& sent = sentences[live[i]];
      const bool forced = t > sent.max_length;  // past the limit: every live beam ends here
      std::vector<Candidate> cands;
      for (std::int64_t k = 0; k < beam; ++k) {
        const Live& b = sent.beams[static_cast<std::size_t>(k)];
        if (b.log_prob == kNegInf) continue;
        const double* row = lp.data() + (static_cast<std::int64_t>(i) * beam + k) * vocab;
        if (forced) {
          cands.push_back({b.log_prob + row[eos], k, eos});
          continue;
        }
        // The best 2 * beam continuations of this row can hold every survivor it contributes.
        std::vector<std::int64_t> ids(static_cast<std::size_t>(vocab));
        for (std::int64_t w = 0; w < vocab; ++w) ids[static_cast<std::size_t>(w)] = w;
        const auto top = std::min<std::int64_t>(2 * beam, vocab);
        std::partial_sort(ids.begin(), ids.begin() + top, ids.end(),
                          [&](std::int64_t a, std::int64_t c) { return row[a] > row[c] || (row[a] == row[c] && a < c); });
        for (std::int64_t j = 0; j < top; ++j) cands.push_back({b.log_prob + row[ids[static_cast<std::size_t>(j)]], k, ids[static_cast<std::size_t>(j)]});
      }
      std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& c) { return a.log_prob > c.log_prob; });
      if (cands.size() > static_cast<std::size_t>(2 * beam)) cands.resize(static_cast<std::size_t>(2 * beam));

      // eos among the best `beam` candidates ends a hypothesis; the best `beam` others live on.
      std::vector<Live> next;
      std::vector<std::int64_t> parents;
      for (std::size_t r = 0; r < cands.size(); ++r) {
        const Candidate& c = cands[r];
        const Live& parent = sent.beams[static_cast<std::size_t>(c.beam)];
        if (c.token == eos) {
          if (r < static_cast<std::size_t>(beam) && c.log_prob != kNegInf) {
            Hypothesis h{parent.tokens, c.log_prob, 0.0};
            h.tokens.push_back(eos);
            h.score = c.log_prob / length_penalty(static_cast<std::int64_t>(h.tokens.size()), o.alpha);
            sent.finished.push_back(std::move(h));
          }
        } else if (static_cast<std::int64_t>(next.size()) < beam && c.log_prob != kNegInf) {
          Live l{parent.tokens, c.log_prob};
          l.tokens.push_back(c.token);
          next.push_back(std::move(l));
          parents.push_back(c.beam);
        }
      }
      // Done: the search ran out of length, collected `beam` hypotheses, or no live hypothesis
      // can beat the best finished one (log-probabilities only fall, and the penalty is largest
      // at the maximum length, so live.log_prob / lp(max_length) bounds any final score).
      bool done = forced || next.empty() || static_cast<std::int64_t>(sent.finished.size()) >= beam;
      if (!done && !sent.finished.empty()) {
        double best = kNegInf;
        for (const auto& h : sent.finished) best = std::max(best, h.score);
        double bound = kNegInf;
        for (const auto& l : next) bound = std::max(bound, l.log_prob / length_penalty(sent.max_length + 1, o.alpha));
        done = best >= bound;
      }
      if (done) {
        sent.done = true;
        continue;
      }
      while (static_cast<std::int64_t>(next.size()) < beam) {  // pad with empty slots
        next.push_back(Live{{}, kNegInf});
        parents.push_back(0);
      }
      for (std::int64_t k = 0; k < beam; ++k)
        keep_rows.push_back(static_cast<std::int64_t>(i) * beam + parents[static_cast<std::size_t>(k)]);
      sent.beams = std::move(next);
      still_live.push_back(live[i]);
    }
    live = std::move(still_live);
    if (!live.empty()) model.reorder(keep_rows);
  }

  std::vector<std::vector<Hypothesis>> out(sentences.size());
  for (std::size_t s = 0; s < sentences.size(); ++s) {
    auto& f = sentences[s].finished;
    std::stable_sort(f.begin(), f.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    if (f.size() > static_cast<std::size_t>(o.n_best)) f.resize(static_cast<std::size_t>(o.n_best));
    out[s] = std::move(f);
  }
  return out;
}

}  // namespace attnlab::nmt
