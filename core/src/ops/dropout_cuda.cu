// CUDA kernel of dropout.cpp: the mask comes from philox.h, the same code random.cpp runs on the
// host, so it is bit-identical to the CPU's. One thread per Philox block of four elements.
#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"
#include "random/philox.h"

namespace attnlab::cuda {
namespace {

// out[i] = u(i) >= p ? in[i] * scale : 0, u(i) = word i % 4 of the block offset + i / 4.
template <typename T>
__global__ void dropout_kernel(const T* in,  // in: (n)
                               T* out,       // out: (n)
                               std::int64_t n, double p, compute_t<T> scale, philox::SeedRef seed_ref,
                               std::uint64_t offset) {
  const std::uint64_t seed = seed_ref.get();  // once per thread: a slot is read when the kernel runs
  const std::int64_t blocks = (n + 3) / 4;
  for (std::int64_t q = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; q < blocks;
       q += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint32_t words[4];
    philox::block_words(seed, offset + static_cast<std::uint64_t>(q), words);
    for (int w = 0; w < 4; ++w) {
      const std::int64_t i = q * 4 + w;
      if (i >= n) break;
      const float u = philox::word_to_uniform(words[w]);
      store(out, i, static_cast<double>(u) >= p ? load(in, i) * scale : compute_t<T>(0));
    }
  }
}

}  // namespace

void dropout_apply(DType dtype, const void* in, void* out, std::int64_t n, double p, philox::SeedRef seed,
                   std::uint64_t offset, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("dropout", dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto scale = static_cast<compute_t<T>>(1.0 / (1.0 - p));
    dropout_kernel<T><<<grid_for((n + 3) / 4), kThreads, 0, stream>>>(static_cast<const T*>(in),
                                                                      static_cast<T*>(out), n, p, scale, seed, offset);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace attnlab::cuda
