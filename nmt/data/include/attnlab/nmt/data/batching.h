#pragma once
// Token-budget batching as in the paper ("each training batch contained a set of sentence pairs
// containing approximately 25000 source tokens and 25000 target tokens"): pairs are sorted by
// (source length, target length), so each batch holds pairs of similar lengths, and cut so that
// the padded source tokens (B * S) and the padded target tokens (B * T) each stay within the
// budget. The batches are fixed for a corpus and budget; each epoch visits all of them in an
// order shuffled deterministically by (seed, epoch). An iterator's position is two integers, so
// a checkpoint can save it and a resumed run continues at exactly the same batch.
//
// Static shapes (BatchingOptions::pad_to_multiple = m > 0): both lengths are rounded up to a
// multiple of m before the budget is applied, and a batch's tensors get as many rows as the budget
// allows at its rounded lengths, the rows past its pairs holding a one-token source and a target
// the loss ignores. The shape [B, S, T] of a batch is then fixed by its (S, T), so an epoch has a
// few dozen shapes instead of hundreds: what a GPU's per-shape plans (cuDNN's attention graphs)
// and captured CUDA graphs of a step need to be reused. The added rows and positions change no
// loss or gradient (every row is its own sequence, and their targets are all padding); dropout
// draws other masks, since it numbers the elements of the padded tensors.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/nmt/data/encoded.h"
#include "attnlab/tensor.h"

namespace attnlab::nmt {

struct Batch {
  std::vector<std::size_t> indices;  // pair indices into the EncodedCorpus
  std::int64_t src_len = 0;          // S: longest source in the batch (at least 1)
  std::int64_t tgt_len = 0;          // T: longest target + 1 (for bos / eos)
  std::int64_t src_tokens = 0;       // real source tokens (sum of source lengths)
  std::int64_t tgt_tokens = 0;       // real target tokens: sum of (target length + 1), the
                                     // positions the loss counts
  std::int64_t rows = 0;              // rows of its tensors: size(), or more with static shapes
  std::int64_t size() const { return static_cast<std::int64_t>(indices.size()); }
  std::int64_t padded_rows() const { return std::max(rows, size()); }
  std::int64_t padded_src_tokens() const { return padded_rows() * src_len; }
  std::int64_t padded_tgt_tokens() const { return padded_rows() * tgt_len; }
};

// A batch as tensors, all i64 on the CPU, padded with pad_id, B = batch.padded_rows():
//   src     [B, S]  source ids                 (an added row: eos, then padding)
//   tgt_in  [B, T]  bos, y_1 .. y_n            (an added row: bos, then padding)
//   tgt_out [B, T]  y_1 .. y_n, eos (labels)   (an added row: padding only)
struct BatchTensors {
  Tensor src, tgt_in, tgt_out;
  std::int64_t src_tokens = 0;  // the pairs' source tokens (non-pad entries of src outside added rows)
  std::int64_t tgt_tokens = 0;  // non-pad entries of tgt_out
};
BatchTensors make_batch_tensors(const EncodedCorpus& corpus, const Batch& batch,
                                std::int32_t pad_id = kPadId, std::int32_t bos_id = kBosId,
                                std::int32_t eos_id = kEosId);

// Cuts the whole corpus into batches, in length order. A pair that alone exceeds the budget gets
// a batch of its own (filter_by_length() should keep such pairs out). With pad_to_multiple m > 0
// the lengths are rounded up to multiples of m and each batch's rows filled up to the budget
// (static shapes, above). Throws for a budget < 1 or m < 0.
std::vector<Batch> make_batches(const EncodedCorpus& corpus, std::int64_t max_tokens,
                                std::int64_t pad_to_multiple = 0);

// The shapes an epoch of `batches` has, and how much of them is padding.
struct ShapeSummary {
  std::size_t batches = 0;
  std::size_t shapes = 0;             // distinct [B, S, T]
  std::int64_t real_tokens = 0;       // source + target tokens of the pairs
  std::int64_t padded_tokens = 0;     // source + target entries of the tensors (B*S + B*T)
  double real_share() const {
    return padded_tokens > 0 ? static_cast<double>(real_tokens) / static_cast<double>(padded_tokens) : 0.0;
  }
};
ShapeSummary summarize_shapes(const std::vector<Batch>& batches);

// A permutation of 0..n-1 that depends only on (seed, epoch): std::mt19937_64 and an explicit
// Fisher-Yates shuffle (no std::shuffle / distributions, whose results differ between standard
// libraries).
std::vector<std::size_t> shuffled_order(std::size_t n, std::uint64_t seed, std::uint64_t epoch);

struct BatchingOptions {
  std::int64_t max_tokens = 25000;  // budget per side, padding included
  std::uint64_t seed = 1;           // shuffle seed
  bool shuffle = true;              // false: every epoch in length order
  std::int64_t pad_to_multiple = 0; // > 0: static shapes (above)
};

// Where an iterator stands: the next batch it yields is number `index` of epoch `epoch`.
struct BatchPosition {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;
  friend bool operator==(const BatchPosition&, const BatchPosition&) = default;
};

class BatchIterator {
 public:
  // Throws for an empty corpus.
  BatchIterator(std::shared_ptr<const EncodedCorpus> corpus, BatchingOptions options);

  // The batch at position() and a step forward (into the next epoch after the last batch).
  const Batch& next();
  BatchTensors next_tensors() { return make_batch_tensors(*corpus_, next()); }

  BatchPosition position() const { return position_; }
  // Moves to a saved position; throws when its index is not below batches_per_epoch().
  void set_position(BatchPosition position);

  std::size_t batches_per_epoch() const { return batches_.size(); }
  // The batches in length order (an epoch visits them in epoch_order()).
  const std::vector<Batch>& batches() const { return batches_; }
  std::vector<std::size_t> epoch_order(std::uint64_t epoch) const;
  const BatchingOptions& options() const { return options_; }
  const EncodedCorpus& corpus() const { return *corpus_; }
  // Identity of the batch plan (the pairs of every batch, the budget and the seed): save it with
  // the position and compare on resume, so a resume over other data is caught.
  std::string plan_hash() const;

 private:
  std::shared_ptr<const EncodedCorpus> corpus_;
  BatchingOptions options_;
  std::vector<Batch> batches_;
  BatchPosition position_;
  std::uint64_t order_epoch_ = 0;
  std::vector<std::size_t> order_;  // epoch_order(order_epoch_)
};

}  // namespace attnlab::nmt
