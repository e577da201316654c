#include "attnlab/nmt/decode/translator.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "attnlab/autograd.h"
#include "attnlab/nmt/checkpoint/checkpoint_store.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/decode/ensemble.h"
#include "attnlab/nmt/io/hash.h"
#include "attnlab/ops.h"
#include "attnlab/precision.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

// [B, S] ids (i64) of sequences padded with pad; at least one column.
Tensor pad_batch(const std::vector<const std::vector<std::int64_t>*>& seqs, Device device) {
  std::size_t width = 1;
  for (const auto* s : seqs) width = std::max(width, s->size());
  std::vector<std::int64_t> ids(seqs.size() * width, kPadId);
  for (std::size_t i = 0; i < seqs.size(); ++i) std::copy(seqs[i]->begin(), seqs[i]->end(), ids.begin() + static_cast<std::ptrdiff_t>(i * width));
  return Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(seqs.size()), static_cast<std::int64_t>(width)}, ids)
      .to(device);
}

// Batches of indices into `lengths`, longest first, each of about `budget` padded tokens.
std::vector<std::vector<std::size_t>> length_batches(const std::vector<std::size_t>& lengths, std::int64_t budget) {
  std::vector<std::size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
  std::vector<std::vector<std::size_t>> batches;
  std::int64_t width = 0;  // the batch's first (longest) entry fixes its width
  for (std::size_t i : order) {
    const auto length = static_cast<std::int64_t>(std::max<std::size_t>(1, lengths[i]));
    if (batches.empty() || static_cast<std::int64_t>(batches.back().size() + 1) * width > budget) {
      batches.emplace_back();
      width = length;
    }
    batches.back().push_back(i);
  }
  return batches;
}

// Whether the data an experiment names is there (its synthetic corpus, or its dev or test files).
bool data_present(const ExperimentConfig& c) {
  if (c.data.synthetic) return fs::exists(synthetic_corpus_dir(c));
  for (const std::string* p : {&c.data.test_source, &c.data.dev_source, &c.data.train_source})
    if (!p->empty()) return fs::exists(*p);
  return true;
}

// A checkpoint's configuration as training resolved it: relative paths in it (a suite row's data
// cache, runs/SUITE/.cache) are relative to the folder training ran in, which is not recorded.
// The checkpoint's folder is tried first, then the run folder and each of its ancestors, and the
// first under which the data is found wins (the checkpoint's folder when none has it).
ExperimentConfig parse_embedded_config(const std::string& text, const std::string& checkpoint, const fs::path& run_dir) {
  const std::string name = " (embedded configuration)";
  ExperimentConfig first = parse_experiment(text, checkpoint + name);
  if (data_present(first)) return first;
  for (fs::path dir = fs::absolute(run_dir).lexically_normal(); !dir.empty(); dir = dir.parent_path()) {
    ExperimentConfig c = parse_experiment(text, (dir / "config.toml").string() + name);
    if (data_present(c)) return c;
    if (dir == dir.root_path()) break;
  }
  return first;
}

}  // namespace

LoadedModel load_model(const std::string& path, const Registry& registry, Device device) {
  check_device_available(device);
  LoadedModel out;
  out.device = device;
  fs::path run_dir;
  Checkpoint ck;
  if (fs::is_directory(path)) {
    run_dir = path;
    LatestCheckpoint latest = CheckpointStore(run_dir, 1 << 30).latest();
    ATTNLAB_CHECK(latest, "{} holds no valid checkpoint (train it with attnlab train first)", path);
    out.warnings = latest.warnings;
    ck = std::move(*latest.checkpoint);
    out.checkpoint = latest.path.string();
  } else {
    ck = load_checkpoint(path);
    out.checkpoint = path;
    run_dir = fs::path(path).parent_path().parent_path();
  }
  out.step = ck.step;
  out.config = parse_embedded_config(ck.config, out.checkpoint, run_dir);
  const fs::path vocab_path = run_dir / "vocab.model";
  ATTNLAB_CHECK(fs::exists(vocab_path), "the vocabulary of {} is missing: expected {}", out.checkpoint, vocab_path.string());
  out.vocab = Vocabulary::load(vocab_path.string());
  ATTNLAB_CHECK(out.vocab.model_hash() == ck.spm_model_hash,
                "{} does not belong to {}: vocabulary hash {} but the checkpoint was trained with {}", vocab_path.string(),
                out.checkpoint, out.vocab.model_hash(), ck.spm_model_hash);
  TransformerConfig mc = out.config.model;
  mc.vocab_size = out.vocab.size();
  mc.pad_id = kPadId;
  out.init = std::make_unique<Generator>(out.config.seed);
  out.dropout = std::make_unique<Generator>(out.config.seed + 1);
  out.model = std::make_unique<Transformer>(mc, registry, *out.init, *out.dropout, DType::f32, device);
  apply_to_module(ck, *out.model);
  out.model->eval();
  return out;
}

TransformerStepModel::TransformerStepModel(Transformer& model, const Tensor& src, std::int64_t beam)
    : model_(model), encoded_(model.encode(src)), state_(model.start_decoding()) {
  std::vector<std::int64_t> rows;
  for (std::int64_t s = 0; s < src.dim(0); ++s)
    for (std::int64_t k = 0; k < beam; ++k) rows.push_back(s);
  encoded_.memory = select_rows(encoded_.memory, rows);
  encoded_.src_mask = select_rows(encoded_.src_mask, rows);
  if (encoded_.src_lengths.defined())
    encoded_.src_lengths = select_rows(encoded_.src_lengths.to(DType::f32), rows).to(DType::i32);
}

Tensor TransformerStepModel::next_log_probs(const std::vector<std::int64_t>& last_tokens) {
  const auto rows = static_cast<std::int64_t>(last_tokens.size());
  Tensor tgt = Tensor::from_vector<std::int64_t>({rows, 1}, last_tokens).to(encoded_.memory.device());
  Tensor logits = model_.project(model_.decode(tgt, encoded_, &state_));  // [rows, 1, V]
  return log_softmax(logits.reshape({rows, model_.config().vocab_size}));
}

void TransformerStepModel::reorder(const std::vector<std::int64_t>& rows) {
  state_.reorder(rows);
  encoded_.memory = select_rows(encoded_.memory, rows);
  encoded_.src_mask = select_rows(encoded_.src_mask, rows);
  if (encoded_.src_lengths.defined())
    encoded_.src_lengths = select_rows(encoded_.src_lengths.to(DType::f32), rows).to(DType::i32);
}

std::vector<std::vector<std::int64_t>> translate_ids(Transformer& model, const std::vector<std::vector<std::int32_t>>& sources,
                                                     const BeamOptions& options, std::int64_t batch_tokens, Device device) {
  return translate_ids(std::vector<Transformer*>{&model}, sources, options, batch_tokens, device);
}

std::vector<std::vector<std::int64_t>> translate_ids(const std::vector<Transformer*>& models,
                                                     const std::vector<std::vector<std::int32_t>>& sources,
                                                     const BeamOptions& options, std::int64_t batch_tokens, Device device) {
  ATTNLAB_CHECK(!models.empty(), "translate: no model");
  NoGradGuard no_grad;
  std::vector<bool> was_training;
  for (Transformer* m : models) was_training.push_back(m->training()), m->eval();
  std::vector<std::vector<std::int64_t>> src64(sources.size());
  std::vector<std::size_t> lengths(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    src64[i].assign(sources[i].begin(), sources[i].end());
    lengths[i] = sources[i].size();
  }
  std::vector<std::vector<std::int64_t>> out(sources.size());
  for (const auto& batch : length_batches(lengths, std::max<std::int64_t>(batch_tokens / options.beam, 1))) {
    std::vector<const std::vector<std::int64_t>*> seqs;
    std::vector<std::int64_t> batch_lengths;
    for (std::size_t i : batch) {
      seqs.push_back(&src64[i]);
      batch_lengths.push_back(static_cast<std::int64_t>(lengths[i]));
    }
    const Tensor src = pad_batch(seqs, device);
    std::vector<std::unique_ptr<StepModel>> members;
    for (Transformer* m : models) members.push_back(std::make_unique<TransformerStepModel>(*m, src, options.beam));
    std::unique_ptr<StepModel> step =
        members.size() == 1 ? std::move(members[0]) : std::make_unique<EnsembleStepModel>(std::move(members));
    BeamOptions beam = options;
    beam.forbidden = {kPadId, kBosId};
    auto hyps = beam_search(*step, batch_lengths, kBosId, kEosId, beam);
    for (std::size_t j = 0; j < batch.size(); ++j) {
      if (hyps[j].empty()) continue;
      auto tokens = hyps[j][0].tokens;
      if (!tokens.empty() && tokens.back() == kEosId) tokens.pop_back();
      out[batch[j]] = std::move(tokens);
    }
  }
  for (std::size_t i = 0; i < models.size(); ++i) models[i]->train(was_training[i]);
  return out;
}

std::vector<std::string> translate(std::span<LoadedModel> members, const std::vector<std::string>& sources,
                                   const BeamOptions& options, std::int64_t batch_tokens) {
  ATTNLAB_CHECK(!members.empty(), "translate: no model");
  const PrecisionGuard precision(ensemble_precision(members));
  const LoadedModel& first = members.front();
  std::vector<std::vector<std::int32_t>> ids;
  for (const auto& s : sources) ids.push_back(first.vocab.encode(s));
  std::vector<Transformer*> models;
  for (auto& m : members) models.push_back(m.model.get());
  const auto result = translate_ids(models, ids, options, batch_tokens, first.device);
  std::vector<std::string> out;
  for (const auto& tokens : result) out.push_back(first.vocab.decode(std::vector<std::int32_t>(tokens.begin(), tokens.end())));
  return out;
}

std::vector<SentenceScore> score_pairs(std::span<LoadedModel> members, const std::vector<std::string>& sources,
                                       const std::vector<std::string>& targets) {
  ATTNLAB_CHECK(sources.size() == targets.size(), "score: {} sources but {} targets", sources.size(), targets.size());
  ATTNLAB_CHECK(!members.empty(), "score: no model");
  NoGradGuard no_grad;
  const PrecisionGuard precision(ensemble_precision(members));
  const LoadedModel& first = members.front();
  const std::int64_t vocab = first.model->config().vocab_size;
  std::vector<SentenceScore> out(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::vector<std::int64_t> src, tgt_in{kBosId}, tgt_out;
    for (auto id : first.vocab.encode(sources[i])) src.push_back(id);
    for (auto id : first.vocab.encode(targets[i])) tgt_in.push_back(id), tgt_out.push_back(id);
    tgt_out.push_back(kEosId);
    std::vector<Tensor> each;
    for (auto& m : members)
      each.push_back(log_softmax(m.model->forward(pad_batch({&src}, first.device), pad_batch({&tgt_in}, first.device))
                                     .reshape({-1, vocab})));
    Tensor logp = combine_log_probs(each);
    const auto values = logp.to_vector<double>();
    for (std::size_t t = 0; t < tgt_out.size(); ++t)
      out[i].log_prob += values[t * static_cast<std::size_t>(vocab) + static_cast<std::size_t>(tgt_out[t])];
    out[i].tokens = static_cast<std::int64_t>(tgt_out.size());
  }
  return out;
}

}  // namespace attnlab::nmt
