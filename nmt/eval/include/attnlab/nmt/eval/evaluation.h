#pragma once
// Evaluating a trained model on a parallel set: per-wordpiece perplexity (teacher forcing, with
// and without label smoothing) and BLEU of beam-search translations in the configured mode.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/eval/evaluate.h"
#include "attnlab/nmt/decode/translator.h"

namespace attnlab::nmt {

struct Evaluation {
  CorpusScores scores;                  // perplexity() is the paper's per-wordpiece PPL
  double label_smoothing = 0.0;         // of smoothed_perplexity()
  BleuScore bleu;
  std::string bleu_mode;                // "sacrebleu", "tokenized", "paper-wmt14"
  std::string bleu_signature;
  // sacreBLEU's default score (13a, detokenized) of the same output, always reported beside a
  // tokenized or paper-style number; equal to bleu in sacrebleu mode.
  BleuScore sacrebleu;
  std::string sacrebleu_signature;
  std::vector<std::string> hypotheses;  // the translations, in input order
  double decode_seconds = 0.0;
  std::int64_t generated_tokens = 0;    // target pieces produced by beam search (eos excluded)
};

// The BLEU settings of an evaluation mode.
BleuConfig bleu_config_for(const EvalConfig& eval);

// The beam search settings of an evaluation (beam, alpha, max_length_offset).
BeamOptions beam_options_for(const EvalConfig& eval);

// Scores `loaded` on source/reference files. BLEU compares the decoded translations with the
// reference lines as they are in the file.
// Several members are evaluated as one ensemble (ensemble.h).
Evaluation evaluate_model(std::span<LoadedModel> members, const std::string& source_file,
                          const std::string& reference_file, const EvalConfig& eval);
// Several decodings of one set (a decoding grid): the set read, encoded and scored for perplexity
// once, then decoded and scored with BLEU once per element of `decodings`, in their order (the
// evaluation's beam, alpha and max_length_offset give way to each element's); `done`, when given,
// is called with each one's index and evaluation as it ends.
std::vector<Evaluation> evaluate_decodings(
    std::span<LoadedModel> members, const std::string& source_file, const std::string& reference_file,
    const EvalConfig& eval, std::span<const BeamOptions> decodings,
    const std::function<void(std::size_t, const Evaluation&)>& done = {});
inline Evaluation evaluate_model(LoadedModel& loaded, const std::string& source_file, const std::string& reference_file,
                                 const EvalConfig& eval) {
  return evaluate_model(std::span<LoadedModel>(&loaded, 1), source_file, reference_file, eval);
}

}  // namespace attnlab::nmt
