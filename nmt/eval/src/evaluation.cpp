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

Evaluation evaluate_model(std::span<LoadedModel> members, const std::string& source_file,
                          const std::string& reference_file, const EvalConfig& eval) {
  ATTNLAB_CHECK(!members.empty(), "evaluate: no model");
  // Scored and decoded in the precision the model was trained in.
  const PrecisionGuard precision(ensemble_precision(members));
  const LoadedModel& loaded = members.front();
  std::vector<Transformer*> models;
  for (auto& m : members) models.push_back(m.model.get());
  Evaluation out;
  const ParallelCorpus corpus = read_parallel(source_file, reference_file);
  const EncodedCorpus encoded = EncodedCorpus::encode(corpus, loaded.vocab);
  out.label_smoothing = loaded.config.training.label_smoothing;
  out.scores = score_corpus(models, encoded, eval.batch_tokens, out.label_smoothing, loaded.device);

  BeamOptions beam;
  beam.beam = eval.beam;
  beam.alpha = eval.alpha;
  beam.max_length_offset = eval.max_length_offset;
  std::vector<std::vector<std::int32_t>> sources;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    const auto src = encoded.src(i);
    sources.emplace_back(src.begin(), src.end());
  }
  const auto start = std::chrono::steady_clock::now();
  const auto ids = translate_ids(models, sources, beam, eval.batch_tokens, loaded.device);
  out.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& t : ids) {
    out.generated_tokens += static_cast<std::int64_t>(t.size());
    out.hypotheses.push_back(loaded.vocab.decode(std::vector<std::int32_t>(t.begin(), t.end())));
  }
  const BleuConfig bleu = bleu_config_for(eval);
  out.bleu = corpus_bleu(out.hypotheses, {corpus.tgt}, bleu);
  out.bleu_mode = eval.bleu;
  out.bleu_signature = bleu_signature(bleu, 1);
  const BleuConfig standard = BleuConfig::sacrebleu();
  out.sacrebleu = kBleuModes.parse(eval.bleu) == BleuMode::sacrebleu ? out.bleu : corpus_bleu(out.hypotheses, {corpus.tgt}, standard);
  out.sacrebleu_signature = bleu_signature(standard, 1);
  return out;
}

}  // namespace attnlab::nmt
