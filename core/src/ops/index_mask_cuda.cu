// CUDA kernel of index_mask.cpp: one thread per element, grid-stride.
#include "cuda/kernel_util.cuh"
#include "ops/index_mask_cuda.h"

namespace attnlab::cuda {
namespace {

template <typename T, typename I>
__global__ void index_mask_kernel(const I* ids,  // ids: (n)
                                  std::int64_t n, std::int64_t id, double at_id, double otherwise,
                                  T* out) {      // out: (n)
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store(out, i, static_cast<compute_t<T>>(static_cast<std::int64_t>(ids[i]) == id ? at_id : otherwise));
}

}  // namespace

void index_mask(DType ids_dtype, const void* ids, std::int64_t n, std::int64_t id, double at_id, double otherwise,
                DType dtype, void* out, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("index_mask", dtype, [&](auto ftag) {
    using T = decltype(ftag);
    dispatch_index("index_mask", ids_dtype, [&](auto itag) {
      using I = decltype(itag);
      index_mask_kernel<T, I><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const I*>(ids), n, id, at_id,
                                                                     otherwise, static_cast<T*>(out));
      ATTNLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace attnlab::cuda
