#pragma once
// A shared source-target subword vocabulary (SentencePiece, BPE by default), trained once per
// (training data content, options) and cached as cache_dir/spm-<hash>.model, so every experiment
// row that uses the same data and options loads the same model instead of training again.
// Fixed ids: pad = 0, unk = 1, bos = 2, eos = 3.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::nmt {

struct VocabOptions {
  int vocab_size = 8000;
  std::string model_type = "bpe";    // SentencePiece model type: bpe, unigram, char, word
  double character_coverage = 1.0;   // share of characters kept out of <unk>
  int max_sentence_length = 4192;    // bytes; longer training sentences are skipped
  std::uint64_t input_sentence_size = 0;  // sample this many training sentences (0: all of them)
  std::uint32_t seed = 0;            // SentencePiece's random generator (sampling)
  int num_threads = 2;
  // The options as one canonical string; part of the cache key.
  std::string str() const;
};

inline constexpr std::int32_t kPadId = 0;
inline constexpr std::int32_t kUnkId = 1;
inline constexpr std::int32_t kBosId = 2;
inline constexpr std::int32_t kEosId = 3;

class Vocabulary {
 public:
  // Returns the model for (content of training_files, options): loads cache_dir/spm-<hash>.model
  // when it exists and loads, otherwise trains on every line of every file (plain or gzip,
  // typically the source and the target training files, so the vocabulary is shared) and
  // stores the model there (written to a temporary name, then renamed). cache_dir is created.
  // Throws attnlab::Error when a file cannot be read or SentencePiece refuses the options.
  static Vocabulary train_or_load(const std::vector<std::string>& training_files,
                                  const VocabOptions& options, const std::string& cache_dir);
  // Loads a model file; throws attnlab::Error naming it when it is missing or not a model.
  static Vocabulary load(const std::string& model_path);

  // The cache path train_or_load() uses for these files and options (hashes the files).
  static std::string cache_path(const std::vector<std::string>& training_files,
                                const VocabOptions& options, const std::string& cache_dir);

  // Subword ids of a text, without bos / eos.
  std::vector<std::int32_t> encode(std::string_view text) const;
  std::vector<std::string> encode_pieces(std::string_view text) const;
  // Text of ids; pad, bos and eos are skipped.
  std::string decode(std::span<const std::int32_t> ids) const;
  std::string decode(const std::vector<std::int32_t>& ids) const {
    return decode(std::span<const std::int32_t>(ids));
  }
  std::string piece(std::int32_t id) const;

  std::int32_t size() const;
  std::int32_t pad_id() const { return kPadId; }
  std::int32_t unk_id() const { return kUnkId; }
  std::int32_t bos_id() const { return kBosId; }
  std::int32_t eos_id() const { return kEosId; }
  // Content hash of the .model file (part of the key of caches derived from this vocabulary).
  const std::string& model_hash() const { return model_hash_; }
  const std::string& model_path() const { return model_path_; }
  // True when train_or_load() trained this model (false when it came from the cache).
  bool trained() const { return trained_; }

  struct Impl;  // opaque: keeps SentencePiece out of this header

 private:
  // The vocabulary of a serialized model read from (or just written to) `path`; `failure` begins the
  // error when it does not load.
  static Vocabulary from_model(const std::string& bytes, const std::string& path, std::string_view failure);

  std::shared_ptr<const Impl> impl_;
  std::string model_path_;
  std::string model_hash_;
  bool trained_ = false;
};

}  // namespace attnlab::nmt
