#pragma once
// Host side shared by the .cu files: dispatch from run-time head sizes and element type to the
// kernel templates, and launches with dynamic shared memory. nvcc only.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstddef>
#include <type_traits>

#include "flash_attention_cuda.h"
#include "flash_device.cuh"

namespace attnlab::flash::cuda {

using kernels::kThreads;

// Calls fn(std::integral_constant<int, DK>, std::integral_constant<int, DV>) for the compiled
// head sizes; returns cudaErrorInvalidValue for others (flash_attention.cpp refuses them first).
template <typename Fn>
int with_head_dims(std::int64_t dk, std::int64_t dv, Fn&& fn) {
  auto pick_dv = [&](auto dk_c) -> int {
    switch (dv) {
      case 16: return fn(dk_c, std::integral_constant<int, 16>{});
      case 32: return fn(dk_c, std::integral_constant<int, 32>{});
      case 64: return fn(dk_c, std::integral_constant<int, 64>{});
      case 128: return fn(dk_c, std::integral_constant<int, 128>{});
      default: return static_cast<int>(cudaErrorInvalidValue);
    }
  };
  switch (dk) {
    case 16: return pick_dv(std::integral_constant<int, 16>{});
    case 32: return pick_dv(std::integral_constant<int, 32>{});
    case 64: return pick_dv(std::integral_constant<int, 64>{});
    case 128: return pick_dv(std::integral_constant<int, 128>{});
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

// Calls fn(std::integral_constant<int, DK>, std::integral_constant<int, DV>) for the head sizes of
// the tensor-core kernels (64 and 128; uses_tensor_cores() has checked them).
template <typename Fn>
int with_tc_head_dims(std::int64_t dk, std::int64_t dv, Fn&& fn) {
  auto pick_dv = [&](auto dk_c) -> int {
    if (dv == 64) return fn(dk_c, std::integral_constant<int, 64>{});
    if (dv == 128) return fn(dk_c, std::integral_constant<int, 128>{});
    return static_cast<int>(cudaErrorInvalidValue);
  };
  if (dk == 64) return pick_dv(std::integral_constant<int, 64>{});
  if (dk == 128) return pick_dv(std::integral_constant<int, 128>{});
  return static_cast<int>(cudaErrorInvalidValue);
}

// Calls fn(T{}) with T float or __nv_bfloat16.
template <typename Fn>
int with_element(Element element, Fn&& fn) {
  if (element == Element::bf16) return fn(__nv_bfloat16{});
  return fn(float{});
}

// The kernels' argument structs (flash_device.cuh) from a problem, its tensors as element type T.
template <typename T>
kernels::Inputs<T> inputs_of(const Problem& p) {
  const kernels::PositionTerms<T> terms{p.slopes, static_cast<const T*>(p.bucket_scores),
                                        static_cast<const T*>(p.bucket_values), p.score_clip, p.value_clip,
                                        p.tk - p.tq};
  return {static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v),
          static_cast<const T*>(p.mask), p.key_lengths, p.heads, p.tq, p.tk, p.causal, p.scale,
          DropoutStream{p.dropout, p.seed, p.offset, p.seed_slot}, terms};
}
template <typename T>
kernels::BackwardInputs<T> backward_inputs_of(const Problem& p, const void* dout, const float* lse,
                                              const float* delta) {
  return {inputs_of<T>(p), static_cast<const T*>(dout), lse, delta};
}

// Launches `kernel` on `stream` with `threads` threads per block and `smem` bytes of dynamic
// shared memory (above 48 KiB needs the opt-in).
template <typename Kernel, typename... Args>
int launch(Kernel kernel, dim3 grid, unsigned threads, std::size_t smem, cudaStream_t stream, Args... args) {
  cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (status != cudaSuccess) return static_cast<int>(status);
  kernel<<<grid, threads, smem, stream>>>(args...);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace attnlab::flash::cuda
