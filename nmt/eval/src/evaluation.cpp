#include "attnlab/nmt/eval/evaluation.h"

#include <chrono>

#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/data/encoded.h"
#include "attnlab/nmt/decode/ensemble.h"
#include "attnlab/precision.h"

namespace attnlab::nmt {

BleuConfig bleu_config_for(const EvalConfig& eval) {
  return bleu_config_for(eval.bleu, eval.lowercase ? "case:lc" : "case:mixed");
}

BeamOptions beam_options_for(const EvalConfig& eval) {
  BeamOptions beam;
  beam.beam = eval.beam;
  beam.alpha = eval.alpha;
  beam.max_length_offset = eval.max_length_offset;
  return beam;
}

std::vector<Evaluation> evaluate_decodings(std::span<LoadedModel> members, const std::string& source_file,
                                           const std::string& reference_file, const EvalConfig& eval,
                                           std::span<const BeamOptions> decodings,
                                           const std::function<void(std::size_t, const Evaluation&)>& done) {
  ATTNLAB_CHECK(!members.empty(), "evaluate: no model");
  // Scored and decoded in the precision the model was trained in.
  const PrecisionGuard precision(ensemble_precision(members));
  const LoadedModel& loaded = members.front();
  std::vector<Transformer*> models;
  for (auto& m : members) models.push_back(m.model.get());
  Evaluation scored;
  const ParallelCorpus corpus = read_parallel(source_file, reference_file);
  const EncodedCorpus encoded = EncodedCorpus::encode(corpus, loaded.vocab);
  scored.label_smoothing = loaded.config.training.label_smoothing;
  scored.scores = score_corpus(models, encoded, eval.batch_tokens, scored.label_smoothing, loaded.device);

  std::vector<std::vector<std::int32_t>> sources;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    const auto src = encoded.src(i);
    sources.emplace_back(src.begin(), src.end());
  }
  // What every decoding shares: the perplexities above and the BLEU settings.
  const BleuConfig bleu = bleu_config_for(eval);
  const BleuConfig standard = BleuConfig::sacrebleu();
  const bool standard_mode = kBleuModes.parse(eval.bleu) == BleuMode::sacrebleu;
  scored.bleu_mode = eval.bleu;
  scored.bleu_signature = bleu_signature(bleu, 1);
  scored.sacrebleu_signature = bleu_signature(standard, 1);
  std::vector<Evaluation> out;
  for (const BeamOptions& beam : decodings) {
    Evaluation e = scored;
    const auto start = std::chrono::steady_clock::now();
    const auto ids = translate_ids(models, sources, beam, eval.batch_tokens, loaded.device);
    e.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const auto& t : ids) {
      e.generated_tokens += static_cast<std::int64_t>(t.size());
      e.hypotheses.push_back(loaded.vocab.decode(std::vector<std::int32_t>(t.begin(), t.end())));
    }
    e.bleu = corpus_bleu(e.hypotheses, {corpus.tgt}, bleu);
    e.sacrebleu = standard_mode ? e.bleu : corpus_bleu(e.hypotheses, {corpus.tgt}, standard);
    if (done) done(out.size(), e);
    out.push_back(std::move(e));
  }
  return out;
}

Evaluation evaluate_model(std::span<LoadedModel> members, const std::string& source_file,
                          const std::string& reference_file, const EvalConfig& eval) {
  const BeamOptions beam = beam_options_for(eval);
  return std::move(evaluate_decodings(members, source_file, reference_file, eval, std::span(&beam, 1)).front());
}

}  // namespace attnlab::nmt
