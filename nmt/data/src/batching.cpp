// Token-budget batching, deterministic shuffling and batch tensors.
#include "attnlab/nmt/data/batching.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "attnlab/error.h"
#include "attnlab/nmt/io/hash.h"

namespace attnlab::nmt {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

BatchTensors make_batch_tensors(const EncodedCorpus& corpus, const Batch& batch, std::int32_t pad_id,
                                std::int32_t bos_id, std::int32_t eos_id) {
  const std::int64_t pairs = batch.size(), b = batch.padded_rows(), s = batch.src_len, t = batch.tgt_len;
  ATTNLAB_CHECK(pairs > 0 && s > 0 && t > 0, "make_batch_tensors: empty batch (B={}, S={}, T={})", pairs, s, t);
  std::vector<std::int64_t> src(static_cast<std::size_t>(b * s), pad_id);
  std::vector<std::int64_t> tgt_in(static_cast<std::size_t>(b * t), pad_id);
  std::vector<std::int64_t> tgt_out(static_cast<std::size_t>(b * t), pad_id);
  BatchTensors out;
  for (std::int64_t r = pairs; r < b; ++r) {  // added rows: a source of one token, no target
    src[static_cast<std::size_t>(r * s)] = eos_id;
    tgt_in[static_cast<std::size_t>(r * t)] = bos_id;
  }
  for (std::int64_t r = 0; r < pairs; ++r) {
    const std::size_t pair = batch.indices[static_cast<std::size_t>(r)];
    ATTNLAB_CHECK(pair < corpus.size(), "make_batch_tensors: pair {} outside a corpus of {}", pair, corpus.size());
    const auto x = corpus.src(pair);
    const auto y = corpus.tgt(pair);
    ATTNLAB_CHECK(static_cast<std::int64_t>(x.size()) <= s && static_cast<std::int64_t>(y.size()) + 1 <= t,
                  "make_batch_tensors: pair {} (lengths {}, {}) does not fit S={}, T={}", pair, x.size(),
                  y.size(), s, t);
    auto* src_row = src.data() + r * s;
    auto* in_row = tgt_in.data() + r * t;
    auto* out_row = tgt_out.data() + r * t;
    std::copy(x.begin(), x.end(), src_row);
    in_row[0] = bos_id;
    std::copy(y.begin(), y.end(), in_row + 1);
    std::copy(y.begin(), y.end(), out_row);
    out_row[y.size()] = eos_id;
    out.src_tokens += static_cast<std::int64_t>(x.size());
    out.tgt_tokens += static_cast<std::int64_t>(y.size()) + 1;
  }
  out.src = Tensor::from_vector<std::int64_t>(Shape{b, s}, src);
  out.tgt_in = Tensor::from_vector<std::int64_t>(Shape{b, t}, tgt_in);
  out.tgt_out = Tensor::from_vector<std::int64_t>(Shape{b, t}, tgt_out);
  return out;
}

std::vector<Batch> make_batches(const EncodedCorpus& corpus, std::int64_t max_tokens, std::int64_t pad_to_multiple) {
  ATTNLAB_CHECK(max_tokens >= 1, "make_batches: the token budget must be at least 1, got {}", max_tokens);
  ATTNLAB_CHECK(pad_to_multiple >= 0, "make_batches: pad_to_multiple must be 0 (off) or positive, got {}",
                pad_to_multiple);
  const auto rounded = [&](std::int64_t n) {
    return pad_to_multiple > 0 ? (n + pad_to_multiple - 1) / pad_to_multiple * pad_to_multiple : n;
  };
  // With static shapes a batch's tensors take every row the budget allows at its lengths.
  const auto close = [&](Batch& batch) {
    batch.rows = batch.size();
    if (pad_to_multiple > 0)
      batch.rows = std::max(batch.rows, max_tokens / std::max(batch.src_len, batch.tgt_len));
  };
  std::vector<std::size_t> order(corpus.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto ka = std::make_tuple(corpus.src_length(a), corpus.tgt_length(a), a);
    const auto kb = std::make_tuple(corpus.src_length(b), corpus.tgt_length(b), b);
    return ka < kb;
  });
  std::vector<Batch> batches;
  Batch current;
  for (const std::size_t i : order) {
    const auto s = rounded(std::max<std::int64_t>(1, static_cast<std::int64_t>(corpus.src_length(i))));
    const auto t = static_cast<std::int64_t>(corpus.tgt_length(i)) + 1;  // with eos: what the loss counts
    const std::int64_t padded_t = rounded(t);
    const std::int64_t rows = current.size() + 1;
    const std::int64_t new_s = std::max(current.src_len, s), new_t = std::max(current.tgt_len, padded_t);
    if (current.size() > 0 && (rows * new_s > max_tokens || rows * new_t > max_tokens)) {
      close(current);
      batches.push_back(std::move(current));
      current = Batch{};
    }
    current.indices.push_back(i);
    current.src_len = std::max(current.src_len, s);
    current.tgt_len = std::max(current.tgt_len, padded_t);
    current.src_tokens += static_cast<std::int64_t>(corpus.src_length(i));
    current.tgt_tokens += t;
  }
  if (current.size() > 0) {
    close(current);
    batches.push_back(std::move(current));
  }
  return batches;
}

ShapeSummary summarize_shapes(const std::vector<Batch>& batches) {
  ShapeSummary out;
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> shapes;
  for (const Batch& b : batches) {
    shapes.emplace(b.padded_rows(), b.src_len, b.tgt_len);
    out.real_tokens += b.src_tokens + b.tgt_tokens;
    out.padded_tokens += b.padded_src_tokens() + b.padded_tgt_tokens();
  }
  out.batches = batches.size();
  out.shapes = shapes.size();
  return out;
}

std::vector<std::size_t> shuffled_order(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(splitmix64(seed ^ splitmix64(epoch ^ 0x6174746E6C6162ULL)));
  for (std::size_t i = n; i > 1; --i) {
    // Unbiased draw in [0, i) by rejection.
    const std::uint64_t bound = i;
    const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                                std::numeric_limits<std::uint64_t>::max() % bound;
    std::uint64_t r;
    do r = rng();
    while (r >= limit);
    std::swap(order[i - 1], order[static_cast<std::size_t>(r % bound)]);
  }
  return order;
}

BatchIterator::BatchIterator(std::shared_ptr<const EncodedCorpus> corpus, BatchingOptions options)
    : corpus_(std::move(corpus)), options_(options) {
  ATTNLAB_CHECK(corpus_ != nullptr && corpus_->size() > 0, "BatchIterator: the corpus is empty");
  batches_ = make_batches(*corpus_, options_.max_tokens, options_.pad_to_multiple);
  order_epoch_ = 0;
  order_ = epoch_order(0);
}

std::vector<std::size_t> BatchIterator::epoch_order(std::uint64_t epoch) const {
  if (!options_.shuffle) {
    std::vector<std::size_t> order(batches_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    return order;
  }
  return shuffled_order(batches_.size(), options_.seed, epoch);
}

const Batch& BatchIterator::next() {
  if (order_epoch_ != position_.epoch) {
    order_ = epoch_order(position_.epoch);
    order_epoch_ = position_.epoch;
  }
  const Batch& batch = batches_[order_[position_.index]];
  if (++position_.index == batches_.size()) {
    ++position_.epoch;
    position_.index = 0;
  }
  return batch;
}

void BatchIterator::set_position(BatchPosition position) {
  ATTNLAB_CHECK(position.index < batches_.size(),
                "BatchIterator::set_position: index {} of epoch {} is past the {} batches of an epoch",
                position.index, position.epoch, batches_.size());
  position_ = position;
}

std::string BatchIterator::plan_hash() const {
  std::string text = fmt::format("attnlab.batches.v1 max_tokens={} seed={} shuffle={} pairs={}\n",
                                 options_.max_tokens, options_.seed, options_.shuffle, corpus_->size());
  // Runs without static shapes keep the hash their checkpoints hold.
  if (options_.pad_to_multiple > 0) text += fmt::format("pad_to_multiple={}\n", options_.pad_to_multiple);
  for (const Batch& batch : batches_) {
    text += fmt::format("{}x{}: ", batch.src_len, batch.tgt_len);
    for (const std::size_t i : batch.indices) {
      text += std::to_string(i);
      text += ' ';
    }
    text += '\n';
  }
  return hash_bytes(text);
}

}  // namespace attnlab::nmt
