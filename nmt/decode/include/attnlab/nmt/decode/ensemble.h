#pragma once
// Ensembles: several trained models translating and scoring as one, as fairseq and Marian offer.
// At every target position the members' log-probabilities are averaged and renormalised,
//   log p(y | ...) = log_softmax( (1/n) sum_i log p_i(y | ...) ),
// a normalised geometric mean of the members' distributions; beam search is unchanged (it sees
// one model). The members may differ in architecture (layers, heads, plugins) but must share one
// vocabulary.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnlab/nmt/decode/translator.h"
#include "attnlab/precision.h"

namespace attnlab::nmt {

// [rows, V] log-probabilities of each member -> the ensemble's [rows, V]. One member: itself.
Tensor combine_log_probs(const std::vector<Tensor>& members);

// Beam search over several step models at once: their rows advance and reorder together.
class EnsembleStepModel final : public StepModel {
 public:
  explicit EnsembleStepModel(std::vector<std::unique_ptr<StepModel>> members);
  Tensor next_log_probs(const std::vector<std::int64_t>& last_tokens) override;
  void reorder(const std::vector<std::int64_t>& rows) override;

 private:
  std::vector<std::unique_ptr<StepModel>> members_;
};

// Loads every path as load_model() does. Throws an Error naming both checkpoints when two
// members were trained with different vocabularies.
std::vector<LoadedModel> load_ensemble(const std::vector<std::string>& paths, const Registry& registry,
                                       Device device = Device::cpu());

// The precision an ensemble computes in: its members' training precision when they agree, else fp32.
Precision ensemble_precision(std::span<LoadedModel> members);

}  // namespace attnlab::nmt
