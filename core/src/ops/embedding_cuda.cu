// The forward launcher of embedding.cpp's CUDA path (kernels in embedding_cuda_kernels.cuh): a
// gather that checks the ids on the device.
#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"
#include "ops/embedding_cuda_kernels.cuh"

namespace attnlab::cuda {

void embedding_forward(DType dtype, const void* weight, DType ids_dtype, const void* ids, std::int64_t n,
                       std::int64_t vocab, std::int64_t d, std::uint64_t* check, void* out, cudaStream_t stream) {
  if (n * d == 0) return;
  dispatch_floating("embedding", dtype, [&](auto ftag) {
    using T = decltype(ftag);
    dispatch_index("embedding", ids_dtype, [&](auto itag) {
      using I = decltype(itag);
      embedding_kernels::forward_kernel<T, I><<<grid_for(n * d), kThreads, 0, stream>>>(
          static_cast<const T*>(weight), static_cast<const I*>(ids), n, vocab, d, check, static_cast<T*>(out));
      ATTNLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace attnlab::cuda
