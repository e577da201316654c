// The launch plan of adam_step_multi's CUDA path (ops/adam_multi_plan.h), checked on the host.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "attnlab/testing/base_model.h"
#include "ops/adam_multi_plan.h"

using namespace attnlab::detail;

namespace {

// Every element of every tensor covered exactly once, within the launch limits.
void check_plan(const std::vector<std::int64_t>& numel, std::int64_t chunk, int max_tensors, int max_blocks) {
  const std::vector<adam_multi::Launch> launches = adam_multi::plan(numel, chunk, max_tensors, max_blocks);
  std::vector<std::vector<int>> covered(numel.size());
  for (std::size_t i = 0; i < numel.size(); ++i) covered[i].assign(static_cast<std::size_t>(numel[i]), 0);
  for (const adam_multi::Launch& launch : launches) {
    REQUIRE(!launch.blocks.empty());
    REQUIRE(static_cast<int>(launch.tensors.size()) <= max_tensors);
    REQUIRE(static_cast<int>(launch.blocks.size()) <= max_blocks);
    for (const adam_multi::Block& b : launch.blocks) {
      REQUIRE(b.slot >= 0);
      REQUIRE(static_cast<std::size_t>(b.slot) < launch.tensors.size());
      const std::size_t t = launch.tensors[static_cast<std::size_t>(b.slot)];
      REQUIRE(numel[t] > 0);
      REQUIRE(b.chunk * chunk < numel[t]);
      for (std::int64_t e = b.chunk * chunk; e < std::min(numel[t], (b.chunk + 1) * chunk); ++e)
        ++covered[t][static_cast<std::size_t>(e)];
    }
  }
  for (std::size_t i = 0; i < numel.size(); ++i) {
    CAPTURE(i);
    CHECK(std::all_of(covered[i].begin(), covered[i].end(), [](int c) { return c == 1; }));
  }
}

}  // namespace

TEST_CASE("adam_step_multi launch plan covers every element once within the limits") {
  // Small limits so that both the tensor limit and the block limit (in the middle of a tensor) cut.
  const std::vector<std::int64_t> numel = {0, 1, 5, 17, 0, 3, 100, 4, 1, 0, 9, 2, 2, 2};
  for (std::int64_t chunk : {1, 4, 7, 1000}) {
    for (int max_tensors : {1, 3, 36}) {
      for (int max_blocks : {1, 5, 320}) {
        CAPTURE(chunk);
        CAPTURE(max_tensors);
        CAPTURE(max_blocks);
        check_plan(numel, chunk, max_tensors, max_blocks);
      }
    }
  }
  CHECK(adam_multi::plan(std::vector<std::int64_t>{}).empty());
  CHECK(adam_multi::plan(std::vector<std::int64_t>{0, 0}).empty());
}

TEST_CASE("adam_step_multi launch plan of the base model takes few launches") {
  // The base Transformer's parameter list: 1 embedding, 6 encoder and 6 decoder layers (below).
  using namespace attnlab::testing::base_model;
  std::vector<std::int64_t> numel = {kVocab * kModel};
  auto attention = [&] {
    for (int k = 0; k < 4; ++k) numel.insert(numel.end(), {kModel * kModel, kModel});
  };
  auto ffn_and_norms = [&](int norms) {
    numel.insert(numel.end(), {kFF * kModel, kFF, kModel * kFF, kModel});
    for (int k = 0; k < norms; ++k) numel.insert(numel.end(), {kModel, kModel});
  };
  for (int layer = 0; layer < kLayers; ++layer) {
    attention();
    ffn_and_norms(2);
  }
  for (int layer = 0; layer < kLayers; ++layer) {
    attention();
    attention();
    ffn_and_norms(3);
  }
  check_plan(numel, adam_multi::kChunk, adam_multi::kMaxTensors, adam_multi::kMaxBlocks);
  const std::size_t launches = adam_multi::plan(numel).size();
  MESSAGE(numel.size() << " tensors in " << launches << " launches");
  CHECK(launches < numel.size() / 10);
}
