#pragma once
// Beam search as the paper decodes (sec. 6.1): beam size 4, length penalty alpha = 0.6 in the
// GNMT form lp(Y) = ((5 + |Y|) / 6)^alpha, maximum output length = input length + 50, stopping
// early when no live hypothesis can still win. Batched over sentences and beams; the model is
// queried one step at a time (incremental decoding). Greedy decoding is beam 1.
#include <cstdint>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab::nmt {

struct BeamOptions {
  std::int64_t beam = 4;
  double alpha = 0.6;                   // length penalty exponent; 0 ranks by log-probability
  std::int64_t max_length_offset = 50;  // tokens before eos <= source length + offset
  std::int64_t n_best = 1;              // hypotheses returned per sentence (<= beam)
  std::vector<std::int64_t> forbidden{};  // tokens never produced (padding, bos)
};

// ((5 + length) / 6)^alpha
double length_penalty(std::int64_t length, double alpha);

// What beam search asks of a model. Rows are hypotheses (sentence-major, `beam` rows per live
// sentence); the model keeps its own per-row state (for a Transformer: the encoder output and
// the attention caches).
class StepModel {
 public:
  virtual ~StepModel() = default;
  // Log-probabilities [rows, V] of the next token, given each row's newest token.
  virtual Tensor next_log_probs(const std::vector<std::int64_t>& last_tokens) = 0;
  // Keeps rows `rows` of the current state, in that order (the survivors of a step).
  virtual void reorder(const std::vector<std::int64_t>& rows) = 0;
};

struct Hypothesis {
  std::vector<std::int64_t> tokens;  // without bos, ending with eos
  double log_prob = 0.0;             // sum of token log-probabilities (eos included)
  double score = 0.0;                // log_prob / length_penalty(tokens.size(), alpha)
};

// Decodes `source_lengths.size()` sentences. The model must start with `beam` rows per sentence
// (row s * beam + k), all at the start state; every row first receives `bos`. Returns, per
// sentence, up to n_best hypotheses, best first.
std::vector<std::vector<Hypothesis>> beam_search(StepModel& model, const std::vector<std::int64_t>& source_lengths,
                                                 std::int64_t bos, std::int64_t eos, const BeamOptions& options);

}  // namespace attnlab::nmt
