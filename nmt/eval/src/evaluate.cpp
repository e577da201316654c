#include "attnlab/nmt/eval/evaluate.h"

#include <cmath>

#include "attnlab/autograd.h"
#include "attnlab/nmt/data/batching.h"
#include "attnlab/ops/cross_entropy.h"

namespace attnlab::nmt {

double CorpusScores::perplexity() const { return std::exp(nll_per_token()); }
double CorpusScores::smoothed_perplexity() const {
  return tokens ? std::exp(smoothed_loss / static_cast<double>(tokens)) : 1.0;
}

CorpusScores score_corpus(Transformer& model, const EncodedCorpus& corpus, std::int64_t batch_tokens,
                          double label_smoothing, Device device) {
  const bool was_training = model.training();
  model.eval();
  NoGradGuard no_grad;
  CorpusScores scores;
  const std::int64_t vocab = model.config().vocab_size;
  for (const Batch& batch : make_batches(corpus, batch_tokens)) {
    BatchTensors t = make_batch_tensors(corpus, batch);
    Tensor logits = model.forward(t.src.to(device), t.tgt_in.to(device)).reshape({-1, vocab});
    Tensor labels = t.tgt_out.reshape({-1}).to(device);
    const auto plain = cross_entropy(logits, labels, 0.0, kPadId);
    scores.nll += plain.loss_sum.item();
    scores.tokens += plain.tokens;
    if (label_smoothing > 0.0)
      scores.smoothed_loss += cross_entropy(logits, labels, label_smoothing, kPadId).loss_sum.item();
    else
      scores.smoothed_loss += plain.loss_sum.item();
  }
  model.train(was_training);
  return scores;
}

}  // namespace attnlab::nmt
