#include <algorithm>
#include <array>
#include <cstdint>

#include "attnlab/random.h"
#include "cpu/parallel.h"
#include "ops/dropout_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

// out[i] = keep(i) ? in[i] * scale : 0 with keep(i) = [philox_uniform(seed, offset, i) >= p].
// philox_uniform(seed, offset, i) is word i % 4 of the Philox block at counter offset + i / 4;
// one block serves four consecutive elements, so each chunk computes a block once per four
// elements (and once more at an unaligned chunk start). The words are turned into uniforms
// exactly as philox_uniform does, so the mask equals the one drawn element by element and does
// not depend on where the thread chunks begin.
template <typename T>
void apply_mask(const T* in, T* out, std::int64_t n, double p, std::uint64_t seed, std::uint64_t offset) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  const PhiloxKey key{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  cpu::parallel_for(n, cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
    // One Philox block per run of (up to) four elements i .. stop-1 that share the block i / 4.
    for (std::int64_t i = s; i < e;) {
      const auto block = offset + static_cast<std::uint64_t>(i) / 4;
      const std::array<std::uint32_t, 4> words = philox4x32(
          {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u}, key);
      const std::int64_t stop = std::min<std::int64_t>(e, i - i % 4 + 4);
      for (; i < stop; ++i) {
        const float u = static_cast<float>(words[static_cast<std::size_t>(i % 4)] >> 8) * (1.0f / 16777216.0f);
        out[i] = static_cast<double>(u) >= p ? in[i] * scale : T(0);
      }
    }
  });
}

void run(const char* op, const Tensor& in, double p, std::uint64_t seed, std::uint64_t offset, Tensor& out) {
  dispatch_float(op, in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    apply_mask(in.data<T>(), out.data<T>(), in.numel(), p, seed, offset);
  });
}

}  // namespace

void dropout_forward_cpu(const Tensor& x, double p, std::uint64_t seed, std::uint64_t offset, Tensor& y) {
  run("dropout", x, p, seed, offset, y);
}

void dropout_backward_cpu(const Tensor& dy, double p, std::uint64_t seed, std::uint64_t offset,
                          Tensor& dx) {
  run("dropout_backward", dy, p, seed, offset, dx);
}

}  // namespace attnlab::detail
