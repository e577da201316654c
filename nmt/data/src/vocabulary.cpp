// Shared SentencePiece vocabulary, trained once per (data, options) and cached by content hash.
#include "attnlab/nmt/data/vocabulary.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <filesystem>

#include "attnlab/error.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/io/hash.h"
#include "attnlab/nmt/io/file_util.h"

// SentencePiece's log threshold (src/common.h, exported by libsentencepiece, not in its public
// headers). The --minloglevel flag alone comes too late: the trainer logs its command line before
// parsing it.
namespace sentencepiece::logging {
int GetMinLogLevel();
void SetMinLogLevel(int v);
}  // namespace sentencepiece::logging

namespace attnlab::nmt {

struct Vocabulary::Impl {
  sentencepiece::SentencePieceProcessor sp;
};

namespace {

// Feeds in-memory lines to the trainer.
class LinesIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LinesIterator(const std::vector<std::vector<std::string>>& files) : files_(files) { skip_ends(); }
  bool done() const override { return file_ >= files_.size(); }
  void Next() override {
    ++line_;
    skip_ends();
  }
  const std::string& value() const override { return files_[file_][line_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void skip_ends() {
    while (file_ < files_.size() && line_ >= files_[file_].size()) ++file_, line_ = 0;
  }
  const std::vector<std::vector<std::string>>& files_;
  std::size_t file_ = 0, line_ = 0;
};

// Version of the training recipe; bump when the flags below change meaning.
constexpr std::string_view kRecipe = "spm-recipe-v1";

}  // namespace

std::string VocabOptions::str() const {
  return fmt::format(
      "vocab_size={} model_type={} character_coverage={} max_sentence_length={} input_sentence_size={} "
      "seed={} ids=pad0,unk1,bos2,eos3",
      vocab_size, model_type, character_coverage, max_sentence_length, input_sentence_size, seed);
}

std::string Vocabulary::cache_path(const std::vector<std::string>& training_files,
                                   const VocabOptions& options, const std::string& cache_dir) {
  ATTNLAB_CHECK(!training_files.empty(), "Vocabulary: no training files given");
  const std::string key = hash_files(training_files, fmt::format("{} {}", kRecipe, options.str()));
  return (std::filesystem::path(cache_dir) / ("spm-" + key + ".model")).string();
}

namespace {

std::shared_ptr<const Vocabulary::Impl> load_serialized(const std::string& bytes, const std::string& path,
                                                        std::string* why) {
  auto impl = std::make_shared<Vocabulary::Impl>();
  const auto status = impl->sp.LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    *why = fmt::format("'{}' is not a SentencePiece model: {}", path, status.ToString());
    return nullptr;
  }
  const auto& sp = impl->sp;
  if (sp.pad_id() != kPadId || sp.unk_id() != kUnkId || sp.bos_id() != kBosId || sp.eos_id() != kEosId) {
    *why = fmt::format("'{}' has ids pad={} unk={} bos={} eos={}, expected pad=0 unk=1 bos=2 eos=3", path,
                       sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id());
    return nullptr;
  }
  return impl;
}

}  // namespace

Vocabulary Vocabulary::load(const std::string& model_path) {
  ATTNLAB_CHECK(std::filesystem::exists(model_path), "Vocabulary::load: model file '{}' does not exist",
                model_path);
  return from_model(detail::read_file_bytes(model_path, "vocabulary model"), model_path, "Vocabulary::load");
}

Vocabulary Vocabulary::from_model(const std::string& bytes, const std::string& path, std::string_view failure) {
  std::string why;
  Vocabulary vocab;
  vocab.impl_ = load_serialized(bytes, path, &why);
  ATTNLAB_CHECK(vocab.impl_ != nullptr, "{}: {}", failure, why);
  vocab.model_path_ = path;
  vocab.model_hash_ = hash_bytes(bytes);
  return vocab;
}

Vocabulary Vocabulary::train_or_load(const std::vector<std::string>& training_files,
                                     const VocabOptions& options, const std::string& cache_dir) {
  const std::string path = cache_path(training_files, options, cache_dir);
  if (std::filesystem::exists(path)) {
    std::string why;
    const std::string bytes = detail::read_file_bytes(path, "vocabulary model");
    if (auto impl = load_serialized(bytes, path, &why)) {
      Vocabulary vocab;
      vocab.impl_ = std::move(impl);
      vocab.model_path_ = path;
      vocab.model_hash_ = hash_bytes(bytes);
      return vocab;
    }
    // An unusable cache entry is trained again and replaced.
  }

  ATTNLAB_CHECK(options.vocab_size > 4, "Vocabulary: vocab_size must exceed the 4 special ids, got {}",
                options.vocab_size);
  std::vector<std::vector<std::string>> lines;
  lines.reserve(training_files.size());
  for (const std::string& file : training_files) {
    lines.push_back(read_lines(file));
    const bool has_text = std::any_of(lines.back().begin(), lines.back().end(), [](const std::string& line) {
      return line.find_first_not_of(" \t\r\f\v") != std::string::npos;
    });
    ATTNLAB_CHECK(has_text, "the training text '{}' is empty ({} lines, none with text): there is nothing to train "
                  "the vocabulary (or a model) on", file, lines.back().size());
  }

  // Deterministic settings: every sentence in file order, no shuffling unless sampling is asked for
  // (then seeded), fixed ids. The model comes back as bytes and is written atomically below.
  const std::string args = fmt::format(
      "--model_type={} --vocab_size={} --character_coverage={} "
      "--max_sentence_length={} --input_sentence_size={} --shuffle_input_sentence={} --num_threads={} "
      "--pad_id={} --unk_id={} --bos_id={} --eos_id={} --minloglevel=1",
      options.model_type, options.vocab_size, options.character_coverage, options.max_sentence_length,
      options.input_sentence_size, options.input_sentence_size > 0 ? "true" : "false",
      std::max(1, options.num_threads), kPadId, kUnkId, kBosId, kEosId);
  sentencepiece::SetRandomGeneratorSeed(options.seed);
  LinesIterator it(lines);
  std::string model;
  const int log_level = sentencepiece::logging::GetMinLogLevel();
  sentencepiece::logging::SetMinLogLevel(std::max(log_level, 1));  // warnings and errors only
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &model);
  sentencepiece::logging::SetMinLogLevel(log_level);
  ATTNLAB_CHECK(status.ok(), "Vocabulary: SentencePiece training failed ({}): {}", options.str(),
                status.ToString());
  detail::write_file_atomic(path, model);

  Vocabulary vocab = from_model(model, path, "Vocabulary: the trained model does not load");
  vocab.trained_ = true;
  return vocab;
}

std::vector<std::int32_t> Vocabulary::encode(std::string_view text) const {
  ATTNLAB_CHECK(impl_ != nullptr, "Vocabulary: not loaded (use train_or_load or load)");
  std::vector<int> ids;
  const auto status = impl_->sp.Encode(text, &ids);
  ATTNLAB_CHECK(status.ok(), "Vocabulary::encode: {}", status.ToString());
  return {ids.begin(), ids.end()};
}

std::vector<std::string> Vocabulary::encode_pieces(std::string_view text) const {
  ATTNLAB_CHECK(impl_ != nullptr, "Vocabulary: not loaded (use train_or_load or load)");
  std::vector<std::string> pieces;
  const auto status = impl_->sp.Encode(text, &pieces);
  ATTNLAB_CHECK(status.ok(), "Vocabulary::encode_pieces: {}", status.ToString());
  return pieces;
}

std::string Vocabulary::decode(std::span<const std::int32_t> ids) const {
  ATTNLAB_CHECK(impl_ != nullptr, "Vocabulary: not loaded (use train_or_load or load)");
  std::vector<int> kept;
  kept.reserve(ids.size());
  const std::int32_t n = size();
  for (const std::int32_t id : ids) {
    ATTNLAB_CHECK(id >= 0 && id < n, "Vocabulary::decode: id {} out of range [0, {})", id, n);
    if (id != kPadId && id != kBosId && id != kEosId) kept.push_back(id);
  }
  std::string text;
  const auto status = impl_->sp.Decode(kept, &text);
  ATTNLAB_CHECK(status.ok(), "Vocabulary::decode: {}", status.ToString());
  return text;
}

std::string Vocabulary::piece(std::int32_t id) const {
  ATTNLAB_CHECK(id >= 0 && id < size(), "Vocabulary::piece: id {} out of range [0, {})", id, size());
  return impl_->sp.IdToPiece(id);
}

std::int32_t Vocabulary::size() const {
  ATTNLAB_CHECK(impl_ != nullptr, "Vocabulary: not loaded (use train_or_load or load)");
  return impl_->sp.GetPieceSize();
}

}  // namespace attnlab::nmt
