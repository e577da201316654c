#include <algorithm>
#include <cstdint>

#include "cpu/parallel.h"
#include "cpu/philox_mask.h"
#include "ops/dropout_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

// out[i] = keep(i) ? in[i] * scale : 0 with keep(i) = [philox_uniform(seed, offset, i) >= p],
// the mask drawn for a stretch of elements at a time (cpu/philox_mask.h); it depends on the
// element index alone, not on where the thread chunks begin.
template <typename T>
void apply_mask(const T* in, T* out, std::int64_t n, double p, std::uint64_t seed, std::uint64_t offset) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  cpu::parallel_for(n, cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
    constexpr std::int64_t kStretch = 1024;
    std::uint8_t keep[kStretch];
    for (std::int64_t i = s; i < e; i += kStretch) {
      const std::int64_t m = std::min(kStretch, e - i);
      cpu::philox_keep(seed, offset, p, static_cast<std::uint64_t>(i), m, keep);
      for (std::int64_t k = 0; k < m; ++k) out[i + k] = keep[k] ? in[i + k] * scale : T(0);
    }
  });
}

void run(const char* op, const Tensor& in, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& out) {
  const std::uint64_t s = seed.get();  // a slot of the CPU backend is host memory
  dispatch_float(op, in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    apply_mask(in.data<T>(), out.data<T>(), in.numel(), p, s, offset);
  });
}

}  // namespace

void dropout_forward_cpu(const Tensor& x, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& y) {
  run("dropout", x, p, seed, offset, y);
}

void dropout_backward_cpu(const Tensor& dy, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& dx) {
  run("dropout_backward", dy, p, seed, offset, dx);
}

}  // namespace attnlab::detail
