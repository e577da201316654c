// CUDA kernels of adam.cpp: one fused pass per element updating m, v and the parameter, with the
// bias corrections folded into the step size and epsilon as in adam_cpu.cpp. adam_step runs one
// grid-stride kernel per tensor; adam_step_multi one launch per batch of tensors, each block on one
// chunk of one tensor (adam_multi_plan.h). Both run the same element code.
#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"
#include "ops/adam_cuda.h"

namespace attnlab::cuda {
namespace {

// The step's scalars: the step size and epsilon with the bias corrections folded in, the betas,
// the decoupled decay factor 1 - lr * weight_decay and the gradient scale. Where grad_scale_by is
// set, the kernel replaces grad_scale by grad_scale64 times the value there (read_scale).
template <typename C>
struct AdamScalars {
  C a, eps_hat, b1, b2, decay, grad_scale;
  double grad_scale64;
  const double* grad_scale_by;
};

// The scalars with the device-side gradient scale read once per thread (in f64, then rounded, as
// adam_step_scalars folds it on the CPU).
template <typename C>
__device__ __forceinline__ AdamScalars<C> read_scale(AdamScalars<C> s) {
  if (s.grad_scale_by != nullptr) s.grad_scale = static_cast<C>(s.grad_scale64 * *s.grad_scale_by);
  return s;
}

// g = grad_scale grad; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// param = decay param - a m / (sqrt(v) + eps_hat), element i.
template <typename T>
__device__ __forceinline__ void adam_element(T* param, const T* grad, T* m, T* v, std::int64_t i,
                                             const AdamScalars<compute_t<T>>& s) {
  using C = compute_t<T>;
  const C a = s.a, eps_hat = s.eps_hat, b1 = s.b1, b2 = s.b2;
  const C g = s.grad_scale * load(grad, i);
  const C mi = b1 * load(m, i) + (C(1) - b1) * g;
  const C vi = b2 * load(v, i) + (C(1) - b2) * g * g;
  store(m, i, mi);
  store(v, i, vi);
  // Re-read the stored moments so that bf16 rounds them exactly as the stored state.
  store(param, i, s.decay * load(param, i) - a * load(m, i) / (sqrt(load(v, i)) + eps_hat));
}

template <typename T>
__global__ void adam_kernel(T* param,       // param: (n)
                            const T* grad,  // grad: (n)
                            T* m,           // m: (n)
                            T* v,           // v: (n)
                            std::int64_t n, AdamScalars<compute_t<T>> scalars) {
  const AdamScalars<compute_t<T>> s = read_scale(scalars);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    adam_element(param, grad, m, v, i, s);
}

// Block b: elements [chunk[b] * chunk_size, min((chunk[b] + 1) * chunk_size, numel[slot[b]])) of
// tensor slot[b], each param/grad/m/v of shape (numel[slot[b]]).
template <typename T>
__global__ void adam_multi_kernel(AdamMultiTable table, std::int64_t chunk_size, AdamScalars<compute_t<T>> scalars) {
  const AdamScalars<compute_t<T>> s = read_scale(scalars);
  const int slot = table.slot[blockIdx.x];
  const std::int64_t n = table.numel[slot];
  const std::int64_t begin = static_cast<std::int64_t>(table.chunk[blockIdx.x]) * chunk_size;
  const std::int64_t end = begin + chunk_size < n ? begin + chunk_size : n;
  T* param = static_cast<T*>(table.param[slot]);
  const T* grad = static_cast<const T*>(table.grad[slot]);
  T* m = static_cast<T*>(table.m[slot]);
  T* v = static_cast<T*>(table.v[slot]);
  bf16_bits* copy = static_cast<bf16_bits*>(table.bf16_copy[slot]);  // copy: (n) or null
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    adam_element(param, grad, m, v, i, s);
    // The stored parameter rounded as convert's kernel rounds f32 to bf16.
    if (copy != nullptr) store(copy, i, static_cast<float>(load(param, i)));
  }
}

template <typename C>
AdamScalars<C> scalars(const detail::AdamStepScalars& h) {
  return {static_cast<C>(h.a),     static_cast<C>(h.eps_hat), static_cast<C>(h.beta1),
          static_cast<C>(h.beta2), static_cast<C>(h.decay),   static_cast<C>(h.grad_scale),
          h.grad_scale,            h.grad_scale_by};
}

}  // namespace

void adam_update(DType dtype, void* param, const void* grad, void* m, void* v, std::int64_t n,
                 const detail::AdamStepScalars& h, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("adam_step", dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    adam_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(param), static_cast<const T*>(grad),
                                                         static_cast<T*>(m), static_cast<T*>(v), n,
                                                         scalars<C>(h));
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

void adam_update_multi(DType dtype, const AdamMultiTable& table, int blocks, std::int64_t chunk_size,
                       const detail::AdamStepScalars& h, cudaStream_t stream) {
  if (blocks <= 0) return;
  if (blocks > detail::adam_multi::kMaxBlocks) throw_message("adam_step_multi: too many blocks in one launch");
  dispatch_floating("adam_step_multi", dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    adam_multi_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        table, chunk_size, scalars<C>(h));
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace attnlab::cuda
