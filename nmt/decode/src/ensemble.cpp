#include "attnlab/nmt/decode/ensemble.h"

#include "attnlab/ops.h"

namespace attnlab::nmt {

Tensor combine_log_probs(const std::vector<Tensor>& members) {
  ATTNLAB_CHECK(!members.empty(), "ensemble: no members");
  if (members.size() == 1) return members[0];
  Tensor total = members[0];
  for (std::size_t i = 1; i < members.size(); ++i) {
    ATTNLAB_CHECK(members[i].shape() == members[0].shape(), "ensemble: member {} gave log-probabilities {} but member 0 "
                  "gave {}", i, members[i].shape().str(), members[0].shape().str());
    total = add(total, members[i]);
  }
  return log_softmax(scale(total, 1.0 / static_cast<double>(members.size())));
}

EnsembleStepModel::EnsembleStepModel(std::vector<std::unique_ptr<StepModel>> members) : members_(std::move(members)) {
  ATTNLAB_CHECK(!members_.empty(), "ensemble: no members");
}

Tensor EnsembleStepModel::next_log_probs(const std::vector<std::int64_t>& last_tokens) {
  std::vector<Tensor> each;
  for (auto& m : members_) each.push_back(m->next_log_probs(last_tokens));
  return combine_log_probs(each);
}

void EnsembleStepModel::reorder(const std::vector<std::int64_t>& rows) {
  for (auto& m : members_) m->reorder(rows);
}

std::vector<LoadedModel> load_ensemble(const std::vector<std::string>& paths, const Registry& registry, Device device) {
  ATTNLAB_CHECK(!paths.empty(), "ensemble: give at least one checkpoint");
  std::vector<LoadedModel> members;
  for (const auto& p : paths) {
    members.push_back(load_model(p, registry, device));
    const LoadedModel &first = members.front(), &last = members.back();
    ATTNLAB_CHECK(last.vocab.model_hash() == first.vocab.model_hash(),
                  "ensemble: {} was trained with vocabulary {} but {} with {}; members must share one vocabulary",
                  last.checkpoint, last.vocab.model_hash(), first.checkpoint, first.vocab.model_hash());
  }
  return members;
}

Precision ensemble_precision(std::span<LoadedModel> members) {
  const Precision first = precision_from_name(members.front().config.training.precision);
  for (const auto& m : members)
    if (precision_from_name(m.config.training.precision) != first) return Precision::fp32;
  return first;
}

}  // namespace attnlab::nmt
