#pragma once
// A corpus as subword ids, stored flat (one id array and one offset array per side) and cached
// in a binary file keyed by (corpus key, vocabulary model hash), so a run that reuses both skips
// encoding.
//
// Cache file layout (little-endian):
//   0   8  magic "ATLNENC\0"
//   8   4  u32 format version (1)
//   12  4  u32 reserved (0)
//   16 32  cache key, 32 lowercase hex digits
//   48  8  u64 pair count N
//   56  8  u64 source id count
//   64  8  u64 target id count
//   72  8  u64 payload size in bytes
//   80 16  XXH3-128 of the payload (canonical, big-endian bytes)
//   96     payload: u64 src_offsets[N+1], u64 tgt_offsets[N+1], i32 src_ids[], i32 tgt_ids[]
// A file whose size, magic, version, key, checksum or offsets disagree is rejected as a whole.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/data/vocabulary.h"

namespace attnlab::nmt {

class EncodedCorpus {
 public:
  EncodedCorpus() : src_offsets_{0}, tgt_offsets_{0} {}

  // Encodes every pair with `vocab` (no bos / eos: batching adds them), in parallel.
  static EncodedCorpus encode(const ParallelCorpus& corpus, const Vocabulary& vocab);

  void add(std::span<const std::int32_t> src, std::span<const std::int32_t> tgt);
  std::size_t size() const { return src_offsets_.size() - 1; }
  std::span<const std::int32_t> src(std::size_t i) const {
    return {src_ids_.data() + src_offsets_[i], src_ids_.data() + src_offsets_[i + 1]};
  }
  std::span<const std::int32_t> tgt(std::size_t i) const {
    return {tgt_ids_.data() + tgt_offsets_[i], tgt_ids_.data() + tgt_offsets_[i + 1]};
  }
  std::size_t src_length(std::size_t i) const { return src_offsets_[i + 1] - src_offsets_[i]; }
  std::size_t tgt_length(std::size_t i) const { return tgt_offsets_[i + 1] - tgt_offsets_[i]; }
  // All ids of a side, pair after pair.
  std::span<const std::int32_t> src_ids() const { return src_ids_; }
  std::span<const std::int32_t> tgt_ids() const { return tgt_ids_; }
  std::size_t src_token_count() const { return src_ids_.size(); }
  std::size_t tgt_token_count() const { return tgt_ids_.size(); }

  // Binary cache file (layout above), written atomically. load() returns nullopt and says why
  // when the file is missing, truncated, corrupted, of another version or of another key.
  void save(const std::string& path, const std::string& key) const;
  static std::optional<EncodedCorpus> load(const std::string& path, const std::string& key,
                                           std::string* why = nullptr);

  friend bool operator==(const EncodedCorpus&, const EncodedCorpus&) = default;

 private:
  std::vector<std::uint64_t> src_offsets_, tgt_offsets_;  // N + 1 each, starting at 0
  std::vector<std::int32_t> src_ids_, tgt_ids_;
};

// The cache key of an encoded corpus: `corpus_key` identifies the text (for example
// hash_files({src, tgt}, "<filter settings>")), the vocabulary by its model hash.
std::string encoded_cache_key(const std::string& corpus_key, const Vocabulary& vocab);

struct EncodedCacheInfo {
  std::string path;        // cache_dir/enc-<key>.bin
  bool hit = false;        // loaded from the cache
  std::string miss_reason; // why it was (re)built: missing, truncated, checksum mismatch, ...
};

// Loads cache_dir/enc-<key>.bin when it is valid; otherwise calls read_corpus(), encodes it,
// writes the cache and returns the result. A corrupt cache is never used, only rebuilt. Ids are
// checked against the vocabulary size on load.
EncodedCorpus load_or_encode(const std::string& cache_dir, const std::string& corpus_key,
                             const Vocabulary& vocab, const std::function<ParallelCorpus()>& read_corpus,
                             EncodedCacheInfo* info = nullptr);

}  // namespace attnlab::nmt
