// CUDA kernel of adam.cpp: one fused pass per element updating m, v and the parameter, with the
// bias corrections folded into the step size and epsilon as in adam_cpu.cpp.
#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"

namespace attnlab::cuda {
namespace {

// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; param -= a m / (sqrt(v) + eps_hat).
template <typename T>
__global__ void adam_kernel(T* param,       // param: (n)
                            const T* grad,  // grad: (n)
                            T* m,           // m: (n)
                            T* v,           // v: (n)
                            std::int64_t n, compute_t<T> a, compute_t<T> eps_hat, compute_t<T> b1,
                            compute_t<T> b2) {
  using C = compute_t<T>;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const C g = load(grad, i);
    const C mi = b1 * load(m, i) + (C(1) - b1) * g;
    const C vi = b2 * load(v, i) + (C(1) - b2) * g * g;
    store(m, i, mi);
    store(v, i, vi);
    // Re-read the stored moments so that bf16 rounds them exactly as the stored state.
    store(param, i, load(param, i) - a * load(m, i) / (sqrt(load(v, i)) + eps_hat));
  }
}

}  // namespace

void adam_update(DType dtype, void* param, const void* grad, void* m, void* v, std::int64_t n, double a,
                 double eps_hat, double beta1, double beta2, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("adam_step", dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    adam_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(param), static_cast<const T*>(grad),
                                                         static_cast<T*>(m), static_cast<T*>(v), n,
                                                         static_cast<C>(a), static_cast<C>(eps_hat),
                                                         static_cast<C>(beta1), static_cast<C>(beta2));
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace attnlab::cuda
