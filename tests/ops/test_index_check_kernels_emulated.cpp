// The device code of the kernels that check indices on CUDA (embedding's gather and its sorted
// backward, cross_entropy's target check), run on host threads by support/cuda_host_emulation.h
// against the CPU ops: the gather's rows and NaN rows, the index-check word's first bad position
// and value, the backward's sums bit for bit in the CPU's order (with std::stable_sort standing
// in for CUB's stable radix sort), and the count of kept targets. tests/cuda runs the kernels
// themselves where a GPU exists.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/tensor_testing.h"
// After every other header: the emulation defines CUDA's keywords as macros.
#include "support/cuda_host_emulation.h"
#include "support/emulation_orders.h"
#include "ops/cross_entropy_check_kernels.cuh"
#include "ops/embedding_cuda_kernels.cuh"

using namespace attnlab;
namespace ek = attnlab::cuda::embedding_kernels;
namespace ck = attnlab::cuda::cross_entropy_kernels;
namespace emu = cuda_host_emulation;
namespace ic = attnlab::index_check;

namespace {

// Ids in [0, vocab) drawn with repeats, as i64, with `bad` values put at `bad_at`.
std::vector<std::int64_t> draw_ids(std::int64_t n, std::int64_t vocab, std::uint64_t seed,
                                   const std::vector<std::pair<std::int64_t, std::int64_t>>& bad = {}) {
  std::vector<std::int64_t> ids = testing::random_ids({n}, seed, vocab).to_vector<std::int64_t>();
  for (const auto& [at, value] : bad) ids[static_cast<std::size_t>(at)] = value;
  return ids;
}

template <typename I>
std::vector<I> as(const std::vector<std::int64_t>& v) {
  return std::vector<I>(v.begin(), v.end());
}

}  // namespace

TEST_CASE("emulated embedding gather: rows, NaN rows for bad ids, and the first bad id recorded") {
  const std::int64_t vocab = 7, d = 5, n = 23;
  const Tensor weight = testing::random_tensor({vocab, d}, 3, -1.0, 1.0, DType::f32);
  const std::vector<float> w = weight.to_vector<float>();
  const auto ids = draw_ids(n, vocab, 4, {{9, vocab + 5}, {3, -1}, {17, vocab}});
  for (bool wide : {false, true}) {
    CAPTURE(wide);
    const auto i32 = as<std::int32_t>(ids);
    const auto [out, words] = emu::in_every_thread_order([&] {
      std::vector<float> out(static_cast<std::size_t>(n * d), 0.0f);
      std::uint64_t word = ic::kClean;
      // Two blocks of 32 threads: the grid-stride loop covers the n * d = 115 elements.
      emu::launch(dim3(2), 32, [&] {
        if (wide) ek::forward_kernel<float, std::int64_t>(w.data(), ids.data(), n, vocab, d, &word, out.data());
        else ek::forward_kernel<float, std::int32_t>(w.data(), i32.data(), n, vocab, d, &word, out.data());
      });
      return std::tuple(out, std::vector<std::uint64_t>{word});
    });
    const std::uint64_t word = words[0];
    CHECK(ic::key_position(word) == 3);
    CHECK(ic::key_value(word) == -1);
    for (std::int64_t r = 0; r < n; ++r) {
      const std::int64_t id = ids[static_cast<std::size_t>(r)];
      for (std::int64_t j = 0; j < d; ++j) {
        const float got = out[static_cast<std::size_t>(r * d + j)];
        if (id < 0 || id >= vocab) CHECK(std::isnan(got));
        else CHECK(got == w[static_cast<std::size_t>(id * d + j)]);
      }
    }
  }
  // Clean ids leave the word clean; a null word records nothing.
  std::vector<float> out(static_cast<std::size_t>(n * d));
  const auto good = draw_ids(n, vocab, 5);
  std::uint64_t word = ic::kClean;
  emu::launch(dim3(1), 64,
              [&] { ek::forward_kernel<float, std::int64_t>(w.data(), good.data(), n, vocab, d, &word, out.data()); });
  CHECK(word == ic::kClean);
  emu::launch(dim3(1), 64,
              [&] { ek::forward_kernel<float, std::int64_t>(w.data(), ids.data(), n, vocab, d, nullptr, out.data()); });
  CHECK(std::isnan(out[static_cast<std::size_t>(3 * d)]));  // the bad row is still NaN
}

TEST_CASE("emulated embedding backward: sorted runs give the CPU's sums bit for bit, bad ids left out") {
  const std::int64_t vocab = 11, d = 6, n = 57;
  auto ids = draw_ids(n, vocab, 8, {{20, -3}, {40, vocab}});
  const Tensor dout = testing::random_tensor({n, d}, 9, -2.0, 2.0, DType::f32);
  const std::vector<float> g = dout.to_vector<float>();

  std::vector<std::uint32_t> keys(static_cast<std::size_t>(n)), positions(static_cast<std::size_t>(n));
  emu::launch(dim3(2), 32,
              [&] { ek::sort_input_kernel<std::int64_t>(ids.data(), n, vocab, keys.data(), positions.data()); });
  CHECK(keys[20] == vocab);
  CHECK(keys[40] == vocab);
  for (std::size_t i = 0; i < positions.size(); ++i) CHECK(positions[i] == i);
  // CUB's stable radix sort by key, on the host.
  std::vector<std::size_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  std::vector<std::uint32_t> sorted_keys, sorted_positions;
  for (std::size_t i : order) {
    sorted_keys.push_back(keys[i]);
    sorted_positions.push_back(positions[i]);
  }
  const std::vector<float> dweight = emu::in_every_thread_order([&] {
    std::vector<float> dweight(static_cast<std::size_t>(vocab * d), 0.0f);
    // Three blocks for more than three runs: the grid-stride loop hands each block several runs.
    emu::launch(dim3(3), 4, [&] {
      ek::run_sum_kernel<float>(g.data(), sorted_keys.data(), sorted_positions.data(), n, vocab, d, dweight.data());
    });
    return dweight;
  });

  // The CPU op on the same rows without the two bad ids (the order within each row is unchanged).
  std::vector<std::int64_t> kept_ids;
  std::vector<float> kept_rows;
  for (std::int64_t r = 0; r < n; ++r) {
    if (r == 20 || r == 40) continue;
    kept_ids.push_back(ids[static_cast<std::size_t>(r)]);
    kept_rows.insert(kept_rows.end(), g.begin() + r * d, g.begin() + (r + 1) * d);
  }
  const auto kept = static_cast<std::int64_t>(kept_ids.size());
  Tensor weight = Tensor::zeros({vocab, d}, DType::f32).set_requires_grad();
  embedding(weight, Tensor::from_vector<std::int64_t>({kept}, kept_ids))
      .backward(Tensor::from_vector<float>({kept, d}, kept_rows));
  CHECK(weight.grad().to_vector<float>() == dweight);
}

TEST_CASE("emulated cross_entropy target check: kept targets counted, first bad one recorded") {
  const std::int64_t vocab = 9, n = 700;
  auto targets = draw_ids(n, vocab, 12);
  std::int64_t ignored = 0;
  for (std::int64_t i = 0; i < n; i += 7) {
    targets[static_cast<std::size_t>(i)] = -100;
    ++ignored;
  }
  const ic::Rule rule{.lo = 0, .hi = vocab, .has_skip = true, .skip = -100};
  const auto run = [&](const std::vector<std::int64_t>& t, std::uint64_t& word) {
    const std::uint64_t start = word;
    const std::vector<std::uint64_t> got = emu::in_every_thread_order([&] {
      std::uint64_t w = start;
      unsigned long long kept = 0;
      // Two blocks of the kernel's 256 threads: the grid-stride loop covers the 700 targets.
      emu::launch(dim3(2), ck::kCheckThreads,
                  [&] { ck::check_targets_kernel<std::int64_t>(t.data(), n, rule, &w, &kept); });
      return std::vector<std::uint64_t>{w, kept};
    });
    word = got[0];
    return static_cast<std::int64_t>(got[1]);
  };
  std::uint64_t word = ic::kClean;
  CHECK(run(targets, word) == n - ignored);
  CHECK(word == ic::kClean);

  auto bad = targets;
  bad[601] = vocab;
  bad[450] = -1;
  bad[599] = 1000;
  word = ic::kClean;
  const std::int64_t counted = run(bad, word);
  CHECK(ic::key_position(word) == 450);
  CHECK(ic::key_value(word) == -1);
  const std::int64_t bad_kept = (450 % 7 == 0 ? 0 : 1) + (599 % 7 == 0 ? 0 : 1) + (601 % 7 == 0 ? 0 : 1);
  CHECK(counted == n - ignored - bad_kept);  // bad targets are not counted
}
