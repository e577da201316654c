// CUDA kernels of activation.cpp, one thread per element (grid-stride). The formulas are those of
// activation_cpu.cpp (see activation_kernels.h for the derivatives).
#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"

namespace attnlab::cuda {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// 1 / (1 + e^-v), through e^-|v| so that the exponential never overflows.
template <typename C>
__device__ C sigmoid(C v) {
  if (v >= C(0)) return C(1) / (C(1) + exp(-v));
  const C e = exp(v);
  return e / (C(1) + e);
}

template <typename C>
__device__ C activation_value(int kind, C v) {
  switch (kind) {
    case 0: return v > C(0) ? v : C(0);
    case 1: return v * C(0.5) * (C(1) + erf(v * C(kInvSqrt2)));
    case 2: return tanh(v);
    default: return v * sigmoid(v);
  }
}

template <typename C>
__device__ C activation_derivative(int kind, C v) {
  switch (kind) {
    case 0: return v > C(0) ? C(1) : C(0);  // [x > 0]
    case 1: {                               // Phi(x) + x phi(x)
      const C cdf = C(0.5) * (C(1) + erf(v * C(kInvSqrt2)));
      const C pdf = C(kInvSqrt2Pi) * exp(C(-0.5) * v * v);
      return cdf + v * pdf;
    }
    case 2: {  // 1 - tanh(x)^2
      const C t = tanh(v);
      return C(1) - t * t;
    }
    default: {  // s (1 + x (1 - s)), s = sigmoid(x)
      const C s = sigmoid(v);
      return s * (C(1) + v * (C(1) - s));
    }
  }
}

template <typename T>
__global__ void activation_forward_kernel(int kind,
                                          const T* x,  // x: (n)
                                          T* y,        // y: (n)
                                          std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store(y, i, activation_value(kind, load(x, i)));
}

template <typename T>
__global__ void activation_backward_kernel(int kind,
                                           const T* x,   // x: (n), the saved input
                                           const T* dy,  // dy: (n)
                                           T* dx,        // dx: (n)
                                           std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store(dx, i, load(dy, i) * activation_derivative(kind, load(x, i)));
}

}  // namespace

void activation_forward(int kind, DType dtype, const void* x, void* y, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("activation", dtype, [&](auto tag) {
    using T = decltype(tag);
    activation_forward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(kind, static_cast<const T*>(x),
                                                                       static_cast<T*>(y), n);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

void activation_backward(int kind, DType dtype, const void* x, const void* dy, void* dx, std::int64_t n,
                         cudaStream_t stream) {
  if (n == 0) return;
  dispatch_floating("activation_backward", dtype, [&](auto tag) {
    using T = decltype(tag);
    activation_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        kind, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), n);
    ATTNLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace attnlab::cuda
