// CPU kernels of sum and mean: deterministic blocked summation with double accumulators.
#include <algorithm>
#include <array>
#include <vector>

#include "cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/reduce_kernels.h"

namespace attnlab::detail {
namespace {

// Sum of p[0..len) in double (one summation block): kLanes interleaved accumulators (element k
// goes to lane k % kLanes) combined in lane order, so the order is fixed by len alone and the
// adds are independent enough to vectorize.
template <typename T>
double block_sum(const T* p, std::int64_t len) {
  constexpr std::int64_t kLanes = 8;
  std::array<double, kLanes> lane{};
  std::int64_t k = 0;
  for (; k + kLanes <= len; k += kLanes)
    for (std::int64_t l = 0; l < kLanes; ++l) lane[static_cast<std::size_t>(l)] += static_cast<double>(p[k + l]);
  for (; k < len; ++k) lane[static_cast<std::size_t>(k % kLanes)] += static_cast<double>(p[k]);
  double acc = 0;
  for (double v : lane) acc += v;
  return acc;
}

// Contiguous rows (inner == 1): out[o] = scale * sum of row o, blocked as kReduceBlock.
template <typename T>
void reduce_rows(const T* x, std::int64_t outer, std::int64_t n, double scale, T* out) {
  const std::int64_t blocks = (n + kReduceBlock - 1) / kReduceBlock;
  if (blocks <= 1) {
    cpu::parallel_for(outer, cpu::row_grain(n), [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t o = s; o < e; ++o) out[o] = static_cast<T>(block_sum(x + o * n, n) * scale);
    });
    return;
  }
  // Long rows: every (row, block) partial is computed independently (in parallel), then each
  // row adds its partials in block order; the same arithmetic for any thread count.
  std::vector<double> partial(static_cast<std::size_t>(outer * blocks));
  cpu::parallel_for(outer * blocks, std::max<std::int64_t>(1, cpu::kElementwiseGrain / kReduceBlock),
                    [&](std::int64_t s, std::int64_t e) {
                      for (std::int64_t i = s; i < e; ++i) {
                        const std::int64_t o = i / blocks, b = i % blocks;
                        const std::int64_t begin = b * kReduceBlock;
                        const std::int64_t len = std::min(kReduceBlock, n - begin);
                        partial[static_cast<std::size_t>(i)] = block_sum(x + o * n + begin, len);
                      }
                    });
  for (std::int64_t o = 0; o < outer; ++o) {
    double acc = 0;
    for (std::int64_t b = 0; b < blocks; ++b) acc += partial[static_cast<std::size_t>(o * blocks + b)];
    out[o] = static_cast<T>(acc * scale);
  }
}

// Strided reduction (inner > 1): work items are (outer row, tile of kTile columns); each walks
// k = 0..n-1 in order with double accumulators, blocked like the contiguous case.
template <typename T>
void reduce_strided(const T* x, std::int64_t outer, std::int64_t n, std::int64_t inner, double scale,
                    T* out) {
  constexpr std::int64_t kTile = 256;
  const std::int64_t tiles = (inner + kTile - 1) / kTile;
  const std::int64_t item_cost = std::max<std::int64_t>(1, n * std::min(kTile, inner));
  cpu::parallel_for(outer * tiles, cpu::row_grain(item_cost), [&](std::int64_t s, std::int64_t e) {
    std::array<double, kTile> total, block;
    for (std::int64_t i = s; i < e; ++i) {
      const std::int64_t o = i / tiles;
      const std::int64_t j0 = (i % tiles) * kTile;
      const std::int64_t w = std::min(kTile, inner - j0);
      std::fill_n(total.begin(), w, 0.0);
      for (std::int64_t k0 = 0; k0 < n; k0 += kReduceBlock) {
        const std::int64_t k1 = std::min(n, k0 + kReduceBlock);
        std::fill_n(block.begin(), w, 0.0);
        for (std::int64_t k = k0; k < k1; ++k) {
          const T* row = x + (o * n + k) * inner + j0;
          for (std::int64_t j = 0; j < w; ++j) block[static_cast<std::size_t>(j)] += static_cast<double>(row[j]);
        }
        for (std::int64_t j = 0; j < w; ++j) total[static_cast<std::size_t>(j)] += block[static_cast<std::size_t>(j)];
      }
      T* dst = out + o * inner + j0;
      for (std::int64_t j = 0; j < w; ++j) dst[j] = static_cast<T>(total[static_cast<std::size_t>(j)] * scale);
    }
  });
}

}  // namespace

void reduce_sum_cpu(std::string_view op, const Tensor& x, std::int64_t outer, std::int64_t n,
                    std::int64_t inner, double scale, Tensor& out) {
  dispatch_float(op, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.numel() > 0 ? x.data<T>() : nullptr;
    T* po = out.data<T>();
    if (inner == 1)
      reduce_rows(px, outer, n, scale, po);
    else
      reduce_strided(px, outer, n, inner, scale, po);
  });
}

void reduce_sum_backward_cpu(std::string_view op, const Tensor& g, std::int64_t outer,
                             std::int64_t n, std::int64_t inner, double scale, Tensor& dx) {
  dispatch_float(op, g.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (dx.numel() == 0) return;
    const T* pg = g.data<T>();
    T* pd = dx.data<T>();
    const T f = static_cast<T>(scale);
    cpu::parallel_for(outer * n, cpu::row_grain(inner), [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t r = s; r < e; ++r) {
        const T* src = pg + (r / n) * inner;
        T* dst = pd + r * inner;
        for (std::int64_t j = 0; j < inner; ++j) dst[j] = src[j] * f;
      }
    });
  });
}

}  // namespace attnlab::detail
