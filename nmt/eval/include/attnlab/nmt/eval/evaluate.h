#pragma once
// Teacher-forced scores of a model on a corpus: per-wordpiece perplexity, as Table 3 reports it.
#include <cstdint>
#include <vector>

#include "attnlab/nmt/data/encoded.h"
#include "attnlab/nmt/model/transformer.h"

namespace attnlab::nmt {

struct CorpusScores {
  std::int64_t tokens = 0;         // target wordpieces scored (eos included)
  double nll = 0.0;                // summed negative log-likelihood (no label smoothing)
  double smoothed_loss = 0.0;      // summed label-smoothed loss, the training objective
  double nll_per_token() const { return tokens ? nll / static_cast<double>(tokens) : 0.0; }
  // exp(nll / tokens): the per-wordpiece perplexity without smoothing. The paper's Table 3 PPL
  // is per wordpiece; label smoothing would inflate it (smoothed_perplexity()).
  double perplexity() const;
  double smoothed_perplexity() const;
};

// Scores `corpus` in evaluation mode (no dropout, no tape), in length-sorted batches of about
// batch_tokens target tokens.
CorpusScores score_corpus(Transformer& model, const EncodedCorpus& corpus, std::int64_t batch_tokens,
                          double label_smoothing, Device device);
// The same for an ensemble, whose log-probabilities are its members' combined (ensemble.h).
CorpusScores score_corpus(const std::vector<Transformer*>& models, const EncodedCorpus& corpus,
                          std::int64_t batch_tokens, double label_smoothing, Device device);

}  // namespace attnlab::nmt
