#include <algorithm>
#include <map>
#include <random>

#include "attnlab/nmt/data/batching.h"
#include "nmt_test_util.h"

using namespace attnlab::nmt;
using namespace attnlab::nmt::testing;

namespace {

// Pairs of varied lengths; id k of pair i is 4 + (i + k) % 50 (never a special id).
std::shared_ptr<const EncodedCorpus> make_corpus(std::size_t n, std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  auto corpus = std::make_shared<EncodedCorpus>();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t s = 1 + rng() % 40, t = 1 + rng() % 45;
    std::vector<std::int32_t> x(s), y(t);
    for (std::size_t k = 0; k < s; ++k) x[k] = static_cast<std::int32_t>(4 + (i + k) % 50);
    for (std::size_t k = 0; k < t; ++k) y[k] = static_cast<std::int32_t>(4 + (i + 2 * k) % 50);
    corpus->add(x, y);
  }
  return corpus;
}

// A batch's longest source and target (with its start token) among its pairs, each pair counted
// in `seen`, and its source tokens.
struct Longest {
  std::int64_t src = 0, tgt = 0, src_tokens = 0;
};
Longest longest(const Batch& b, const EncodedCorpus& corpus, std::vector<int>& seen) {
  Longest l;
  for (const std::size_t i : b.indices) {
    ++seen[i];
    l.src = std::max<std::int64_t>(l.src, static_cast<std::int64_t>(corpus.src_length(i)));
    l.tgt = std::max<std::int64_t>(l.tgt, static_cast<std::int64_t>(corpus.tgt_length(i)) + 1);
    l.src_tokens += static_cast<std::int64_t>(corpus.src_length(i));
  }
  return l;
}

std::vector<std::vector<std::size_t>> epoch_batches(BatchIterator& it) {
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t b = 0; b < it.batches_per_epoch(); ++b) out.push_back(it.next().indices);
  return out;
}

}  // namespace

TEST_CASE("batches respect the token budget and cover every pair once") {
  const auto corpus = make_corpus(1000);
  for (const std::int64_t budget : {46, 200, 1000, 5000}) {
    INFO("budget " << budget);
    const std::vector<Batch> batches = make_batches(*corpus, budget);
    std::vector<int> seen(corpus->size(), 0);
    std::int64_t src_tokens = 0;
    for (const Batch& b : batches) {
      CHECK(b.size() > 0);
      CHECK(b.padded_src_tokens() <= budget);
      CHECK(b.padded_tgt_tokens() <= budget);
      const Longest l = longest(b, *corpus, seen);
      src_tokens += l.src_tokens;
      CHECK(b.src_len == l.src);
      CHECK(b.tgt_len == l.tgt);
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    CHECK(src_tokens == static_cast<std::int64_t>(corpus->src_token_count()));
    // Length sorting keeps padding low: most of each batch is real tokens.
    if (budget >= 1000) {
      std::int64_t padded = 0;
      for (const Batch& b : batches) padded += b.padded_src_tokens();
      CHECK(static_cast<double>(src_tokens) / static_cast<double>(padded) > 0.9);
    }
  }
  // A pair longer than the budget gets a batch of its own.
  const std::vector<Batch> tiny = make_batches(*corpus, 10);
  for (const Batch& b : tiny)
    if (b.padded_src_tokens() > 10 || b.padded_tgt_tokens() > 10) CHECK(b.size() == 1);
  CHECK(contains(error_of([&] { make_batches(*corpus, 0); }), "at least 1"));
}

TEST_CASE("batch tensors hold padded source and shifted targets") {
  EncodedCorpus corpus;
  corpus.add(std::vector<std::int32_t>{10, 11, 12}, std::vector<std::int32_t>{20, 21});
  corpus.add(std::vector<std::int32_t>{13}, std::vector<std::int32_t>{22, 23, 24, 25});
  Batch batch;
  batch.indices = {0, 1};
  batch.src_len = 3;
  batch.tgt_len = 5;
  const BatchTensors t = make_batch_tensors(corpus, batch);
  CHECK(t.src.shape() == attnlab::Shape{2, 3});
  CHECK(t.tgt_in.shape() == attnlab::Shape{2, 5});
  CHECK(t.tgt_out.shape() == attnlab::Shape{2, 5});
  CHECK(t.src.dtype() == attnlab::DType::i64);
  CHECK(t.src.to_vector<std::int64_t>() == std::vector<std::int64_t>{10, 11, 12, 13, 0, 0});
  CHECK(t.tgt_in.to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 20, 21, 0, 0, 2, 22, 23, 24, 25});
  CHECK(t.tgt_out.to_vector<std::int64_t>() == std::vector<std::int64_t>{20, 21, 3, 0, 0, 22, 23, 24, 25, 3});
  CHECK(t.src_tokens == 4);
  CHECK(t.tgt_tokens == 8);

  // Through make_batches: every batch converts, with token counts matching the batch.
  const auto big = make_corpus(200);
  for (const Batch& b : make_batches(*big, 300)) {
    const BatchTensors bt = make_batch_tensors(*big, b);
    CHECK(bt.src.shape() == attnlab::Shape{b.size(), b.src_len});
    CHECK(bt.src_tokens == b.src_tokens);
    CHECK(bt.tgt_tokens == b.tgt_tokens);
    const auto out = bt.tgt_out.to_vector<std::int64_t>();
    CHECK(std::count(out.begin(), out.end(), 3) == b.size());  // one eos per row
  }
}

TEST_CASE("the batch order is shuffled deterministically by seed and epoch") {
  const auto corpus = make_corpus(800);
  BatchIterator a(corpus, {.max_tokens = 400, .seed = 7});
  BatchIterator b(corpus, {.max_tokens = 400, .seed = 7});
  BatchIterator c(corpus, {.max_tokens = 400, .seed = 8});
  REQUIRE(a.batches_per_epoch() > 20);
  const auto a0 = epoch_batches(a), a1 = epoch_batches(a);
  const auto b0 = epoch_batches(b), b1 = epoch_batches(b);
  const auto c0 = epoch_batches(c);
  CHECK(a0 == b0);
  CHECK(a1 == b1);
  CHECK(a0 != a1);  // each epoch has its own order
  CHECK(a0 != c0);  // and each seed
  // An epoch is a permutation of the fixed batches.
  auto sorted0 = a0, sorted1 = a1;
  std::sort(sorted0.begin(), sorted0.end());
  std::sort(sorted1.begin(), sorted1.end());
  CHECK(sorted0 == sorted1);
  CHECK(a.position() == BatchPosition{2, 0});
  // Shuffled orders are fixed values: a change to the generator would change every run.
  CHECK(shuffled_order(5, 1, 0) == shuffled_order(5, 1, 0));
  const auto order = shuffled_order(1000, 3, 2);
  std::vector<std::size_t> identity(1000);
  std::iota(identity.begin(), identity.end(), std::size_t{0});
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == identity);
  CHECK(order != identity);
  // Without shuffling every epoch runs in length order.
  BatchIterator plain(corpus, {.max_tokens = 400, .seed = 7, .shuffle = false});
  const auto p0 = epoch_batches(plain);
  for (std::size_t i = 0; i < p0.size(); ++i) CHECK(p0[i] == plain.batches()[i].indices);
}

TEST_CASE("an iterator restored from its saved position yields the same batches") {
  const auto corpus = make_corpus(500);
  const BatchingOptions options{.max_tokens = 300, .seed = 42};
  BatchIterator original(corpus, options);
  const std::size_t per_epoch = original.batches_per_epoch();
  // Stop mid-epoch 1, save the position as plain integers.
  for (std::size_t i = 0; i < per_epoch + per_epoch / 3; ++i) original.next();
  const BatchPosition saved = original.position();
  CHECK(saved.epoch == 1);
  CHECK(saved.index == per_epoch / 3);
  const std::uint64_t epoch = saved.epoch, index = saved.index;
  const std::string plan = original.plan_hash();

  BatchIterator resumed(corpus, options);
  CHECK(resumed.plan_hash() == plan);
  resumed.set_position({epoch, index});
  for (std::size_t i = 0; i < 2 * per_epoch; ++i) {
    INFO("batch " << i << " after the resume");
    CHECK(resumed.next().indices == original.next().indices);
  }
  CHECK(resumed.position() == original.position());
  // Tensors follow the same sequence.
  const BatchTensors x = resumed.next_tensors(), y = original.next_tensors();
  CHECK(x.src.to_vector<std::int64_t>() == y.src.to_vector<std::int64_t>());
  CHECK(x.tgt_out.to_vector<std::int64_t>() == y.tgt_out.to_vector<std::int64_t>());

  // Resuming with other data or settings is visible in the plan hash; bad positions are refused.
  CHECK(BatchIterator(corpus, {.max_tokens = 301, .seed = 42}).plan_hash() != plan);
  CHECK(BatchIterator(make_corpus(500, 2), options).plan_hash() != plan);
  CHECK(contains(error_of([&] { resumed.set_position({0, per_epoch}); }), "past the"));
  CHECK(contains(error_of([&] { BatchIterator(std::make_shared<EncodedCorpus>(), options); }), "empty"));
}

TEST_CASE("static shapes: lengths in multiples, rows up to the budget, few shapes, every pair once") {
  const auto corpus = make_corpus(2000);
  for (const std::int64_t budget : {300, 1000, 4096}) {
    const ShapeSummary plain = summarize_shapes(make_batches(*corpus, budget));
    for (const std::int64_t m : {4, 8, 16}) {
      INFO("budget " << budget << ", multiple " << m);
      const std::vector<Batch> batches = make_batches(*corpus, budget, m);
      std::vector<int> seen(corpus->size(), 0);
      std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> rows_at;
      for (const Batch& b : batches) {
        CHECK(b.src_len % m == 0);
        CHECK(b.tgt_len % m == 0);
        CHECK(b.padded_rows() == std::max(b.size(), budget / std::max(b.src_len, b.tgt_len)));
        CHECK(b.padded_src_tokens() <= budget);
        CHECK(b.padded_tgt_tokens() <= budget);
        // The lengths are the pairs' longest, rounded up.
        const Longest l = longest(b, *corpus, seen);
        CHECK(b.src_len >= l.src);
        CHECK(b.src_len < l.src + m);
        CHECK(b.tgt_len >= l.tgt);
        CHECK(b.tgt_len < l.tgt + m);
        // One row count per (S, T): the shape is a function of the lengths.
        const auto it = rows_at.emplace(std::make_pair(b.src_len, b.tgt_len), b.padded_rows()).first;
        CHECK(it->second == b.padded_rows());
      }
      CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
      const ShapeSummary s = summarize_shapes(batches);
      CHECK(s.batches == batches.size());
      CHECK(s.shapes == rows_at.size());
      CHECK(s.real_tokens == plain.real_tokens);
      // Lengths of 1..46 give at most ceil(40 / m) x ceil(46 / m) shapes, against one or more per
      // length pair without.
      CHECK(static_cast<std::int64_t>(s.shapes) <= ((40 + m - 1) / m) * ((46 + m - 1) / m));
      CHECK(s.shapes < plain.shapes);
      CHECK(s.real_share() < plain.real_share());
      CHECK(s.real_share() > 0.5);
    }
  }
  CHECK(contains(error_of([&] { make_batches(*corpus, 100, -1); }), "pad_to_multiple"));
}

TEST_CASE("the added rows of a static shape hold a one-token source and no target") {
  EncodedCorpus corpus;
  corpus.add(std::vector<std::int32_t>{10, 11, 12}, std::vector<std::int32_t>{20, 21});
  Batch batch;
  batch.indices = {0};
  batch.src_len = 4;
  batch.tgt_len = 4;
  batch.rows = 2;
  const BatchTensors t = make_batch_tensors(corpus, batch);
  CHECK(t.src.to_vector<std::int64_t>() == std::vector<std::int64_t>{10, 11, 12, 0, 3, 0, 0, 0});
  CHECK(t.tgt_in.to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 20, 21, 0, 2, 0, 0, 0});
  CHECK(t.tgt_out.to_vector<std::int64_t>() == std::vector<std::int64_t>{20, 21, 3, 0, 0, 0, 0, 0});
  CHECK(t.src_tokens == 3);
  CHECK(t.tgt_tokens == 3);
}

TEST_CASE("static shapes are part of the batch plan, and the plan without them is unchanged") {
  const auto corpus = make_corpus(300);
  const BatchIterator plain(corpus, {.max_tokens = 300, .seed = 42});
  const BatchIterator off(corpus, {.max_tokens = 300, .seed = 42, .pad_to_multiple = 0});
  const BatchIterator on(corpus, {.max_tokens = 300, .seed = 42, .pad_to_multiple = 8});
  CHECK(off.plan_hash() == plain.plan_hash());
  CHECK(on.plan_hash() != plain.plan_hash());
  CHECK(BatchIterator(corpus, {.max_tokens = 300, .seed = 42, .pad_to_multiple = 16}).plan_hash() != on.plan_hash());
  for (const Batch& b : on.batches()) {
    const BatchTensors t = make_batch_tensors(*corpus, b);
    CHECK(t.src.shape() == attnlab::Shape{b.padded_rows(), b.src_len});
    CHECK(t.tgt_out.shape() == attnlab::Shape{b.padded_rows(), b.tgt_len});
    CHECK(t.tgt_tokens == b.tgt_tokens);
  }
}
