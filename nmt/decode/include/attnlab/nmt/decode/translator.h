#pragma once
// A trained model ready for inference: loaded from a run folder (its newest valid checkpoint) or
// one checkpoint file, with the run's vocabulary; translation by beam search; teacher-forced
// scoring of given translations.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnlab/nmt/decode/beam_search.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/nmt/data/vocabulary.h"

namespace attnlab::nmt {

struct LoadedModel {
  ExperimentConfig config;
  Vocabulary vocab;
  std::unique_ptr<Generator> init, dropout;  // outlive the model's modules
  std::unique_ptr<Transformer> model;
  std::string checkpoint;                    // the file the weights came from
  std::int64_t step = 0;
  Device device = Device::cpu();
  std::vector<std::string> warnings;         // newer checkpoints skipped as corrupt
};

// `path` is a run folder (<run>/config.toml, <run>/vocab.model, <run>/checkpoints/) or a
// checkpoint file inside one. The checkpoint's configuration, vocabulary hash and parameter
// names/shapes are checked; the model is put in evaluation mode.
// Throws DeviceError first when `device` is not available here (check_device_available).
// translate(), score_pairs() and evaluate_model() compute in the precision the model was trained
// in (its training.precision).
LoadedModel load_model(const std::string& path, const Registry& registry, Device device = Device::cpu());

// Beam search over a Transformer: the encoder runs once per batch, the decoder one step at a time
// with its attention caches, rows reordered as hypotheses survive.
class TransformerStepModel final : public StepModel {
 public:
  // src [B, S] ids; every sentence gets `beam` rows.
  TransformerStepModel(Transformer& model, const Tensor& src, std::int64_t beam);
  Tensor next_log_probs(const std::vector<std::int64_t>& last_tokens) override;
  void reorder(const std::vector<std::int64_t>& rows) override;

 private:
  Transformer& model_;
  Encoded encoded_;
  DecoderState state_;
};

// Translates `sources` (token ids without bos/eos), in length-sorted batches of about
// batch_tokens source tokens; results in input order, best hypothesis's tokens without eos.
std::vector<std::vector<std::int64_t>> translate_ids(Transformer& model, const std::vector<std::vector<std::int32_t>>& sources,
                                                     const BeamOptions& options, std::int64_t batch_tokens,
                                                     Device device);
// The same with an ensemble (ensemble.h): one beam search over the members' combined
// log-probabilities. One member gives translate_ids of that model.
std::vector<std::vector<std::int64_t>> translate_ids(const std::vector<Transformer*>& models,
                                                     const std::vector<std::vector<std::int32_t>>& sources,
                                                     const BeamOptions& options, std::int64_t batch_tokens,
                                                     Device device);

// Text in, text out: SentencePiece encoding, beam search, decoding. Several members translate as
// an ensemble (they must share a vocabulary: load_ensemble).
std::vector<std::string> translate(std::span<LoadedModel> members, const std::vector<std::string>& sources,
                                   const BeamOptions& options, std::int64_t batch_tokens = 4096);
inline std::vector<std::string> translate(LoadedModel& loaded, const std::vector<std::string>& sources,
                                          const BeamOptions& options, std::int64_t batch_tokens = 4096) {
  return translate(std::span<LoadedModel>(&loaded, 1), sources, options, batch_tokens);
}

// Teacher-forced log-probability of each target given its source (sum over target pieces and
// eos), and the number of pieces scored.
struct SentenceScore {
  double log_prob = 0.0;
  std::int64_t tokens = 0;
};
std::vector<SentenceScore> score_pairs(std::span<LoadedModel> members, const std::vector<std::string>& sources,
                                       const std::vector<std::string>& targets);
inline std::vector<SentenceScore> score_pairs(LoadedModel& loaded, const std::vector<std::string>& sources,
                                              const std::vector<std::string>& targets) {
  return score_pairs(std::span<LoadedModel>(&loaded, 1), sources, targets);
}

}  // namespace attnlab::nmt
