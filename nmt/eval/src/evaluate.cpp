#include "attnlab/nmt/eval/evaluate.h"

#include <cmath>

#include "attnlab/autograd.h"
#include "attnlab/nmt/data/batching.h"
#include "attnlab/nmt/decode/ensemble.h"
#include "attnlab/ops/softmax.h"
#include "attnlab/ops/cross_entropy.h"

namespace attnlab::nmt {

double CorpusScores::perplexity() const { return std::exp(nll_per_token()); }
double CorpusScores::smoothed_perplexity() const {
  return tokens ? std::exp(smoothed_loss / static_cast<double>(tokens)) : 1.0;
}

CorpusScores score_corpus(Transformer& model, const EncodedCorpus& corpus, std::int64_t batch_tokens,
                          double label_smoothing, Device device) {
  return score_corpus(std::vector<Transformer*>{&model}, corpus, batch_tokens, label_smoothing, device);
}

CorpusScores score_corpus(const std::vector<Transformer*>& models, const EncodedCorpus& corpus,
                          std::int64_t batch_tokens, double label_smoothing, Device device) {
  ATTNLAB_CHECK(!models.empty(), "score_corpus: no model");
  std::vector<bool> was_training;
  for (Transformer* m : models) was_training.push_back(m->training()), m->eval();
  NoGradGuard no_grad;
  CorpusScores scores;
  const std::int64_t vocab = models.front()->config().vocab_size;
  for (const Batch& batch : make_batches(corpus, batch_tokens)) {
    BatchTensors t = make_batch_tensors(corpus, batch);
    // One model: its logits. An ensemble: its combined log-probabilities, which the
    // cross-entropy's own log-softmax leaves as they are.
    std::vector<Tensor> each;
    for (Transformer* m : models) {
      Tensor logits = m->forward(t.src.to(device), t.tgt_in.to(device)).reshape({-1, vocab});
      each.push_back(models.size() == 1 ? logits : log_softmax(logits));
    }
    Tensor logits = combine_log_probs(each);
    Tensor labels = t.tgt_out.reshape({-1}).to(device);
    const auto plain = cross_entropy(logits, labels, 0.0, kPadId);
    scores.nll += plain.loss_sum.item();
    scores.tokens += static_cast<std::int64_t>(plain.tokens.item());
    if (label_smoothing > 0.0)
      scores.smoothed_loss += cross_entropy(logits, labels, label_smoothing, kPadId).loss_sum.item();
    else
      scores.smoothed_loss += plain.loss_sum.item();
  }
  for (std::size_t i = 0; i < models.size(); ++i) models[i]->train(was_training[i]);
  return scores;
}

}  // namespace attnlab::nmt
