#pragma once
// Host side shared by the .cu files: dispatch from the element type to the kernel templates (from
// head sizes: flash_head_sizes.h), and launches with dynamic shared memory. nvcc only.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstddef>

#include "flash_attention_cuda.h"
#include "flash_device.cuh"
#include "flash_head_sizes.h"

namespace attnlab::flash::cuda {

using kernels::kThreads;

// A head size no kernel template is compiled for (HeadSizes::with's `otherwise`; flash_attention
// refuses them before any kernel runs).
inline constexpr int kNoHeadSize = static_cast<int>(cudaErrorInvalidValue);

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
          DropoutStream{p.dropout, p.seed, p.offset, p.seed_slot}, terms, p.expr ? *p.expr : expr::DeviceArgs{}};
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

// Launches a kernel NVRTC compiled (a cudaKernel_t from a loaded library: score expressions) like
// launch() above: its arguments' addresses in order, `smem` bytes of dynamic shared memory.
template <typename... Args>
int launch_compiled(const void* kernel, dim3 grid, unsigned threads, std::size_t smem, cudaStream_t stream,
                    Args... args) {
  cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (status != cudaSuccess) return static_cast<int>(status);
  void* argv[] = {static_cast<void*>(&args)...};
  return static_cast<int>(cudaLaunchKernel(kernel, grid, dim3(threads), argv, smem, stream));
}

// The kernel NVRTC compiled with a site's score expressions when there is one (`compiled`), else
// the built `kernel`: the same parameters, so the arguments are converted to the kernel's own types.
template <typename... Params, typename... Args>
int launch_either(const void* compiled, void (*kernel)(Params...), dim3 grid, unsigned threads, std::size_t smem,
                  cudaStream_t stream, Args... args) {
  if (compiled) return launch_compiled(compiled, grid, threads, smem, stream, static_cast<Params>(args)...);
  return launch(kernel, grid, threads, smem, stream, args...);
}

}  // namespace attnlab::flash::cuda
