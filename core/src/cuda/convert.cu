// dtype conversion on the device, for Tensor::to(DType) on a CUDA tensor: the same rules as
// convert_cpu (transfer_cpu.cpp): static_cast between numbers (floats to ints truncate), bf16
// through f32 with round to nearest even. f32 <-> bf16 between 16-byte aligned buffers takes the
// vectorized kernels of convert_kernels.cuh, every other pair one value per thread.
#include <type_traits>

#include "cuda/convert_kernels.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/launch.h"
#include "cuda/runtime.h"

namespace attnlab::cuda {
namespace {

template <typename To, typename From>
__device__ __forceinline__ void convert_one(To* out, const From* in, std::int64_t i) {
  if constexpr (std::is_same_v<From, bf16_bits>)
    out[i] = static_cast<To>(load(in, i));
  else
    out[i] = static_cast<To>(in[i]);
}

template <typename To, typename From>
__global__ void convert_kernel(To* out,        // out: (n)
                               const From* in,  // in: (n)
                               std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<To, bf16_bits>) {
      if constexpr (std::is_same_v<From, bf16_bits>)
        out[i] = in[i];
      else
        store(out, i, static_cast<float>(in[i]));
    } else {
      convert_one(out, in, i);
    }
  }
}

template <typename Fn>
void visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: fn(float{}); return;
    case DType::f64: fn(double{}); return;
    case DType::bf16: fn(bf16_bits{}); return;
    case DType::i32: fn(std::int32_t{}); return;
    case DType::i64: fn(std::int64_t{}); return;
    case DType::u8: fn(std::uint8_t{}); return;
  }
}

}  // namespace

void convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, std::int64_t n, int device_index) {
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device_index));
  if (n == 0) return;
  const cudaStream_t stream = current_stream(device_index);
  namespace ck = convert_kernels;
  if (ck::aligned16(dst) && ck::aligned16(src)) {
    const unsigned blocks = grid_for((n + 7) / 8);
    if (src_dtype == DType::f32 && dst_dtype == DType::bf16) {
      ck::f32_to_bf16_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(src),
                                                                static_cast<std::uint16_t*>(dst), n);
      ATTNLAB_CUDA_CHECK_LAUNCH();
      return;
    }
    if (src_dtype == DType::bf16 && dst_dtype == DType::f32) {
      ck::bf16_to_f32_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(src),
                                                                static_cast<float*>(dst), n);
      ATTNLAB_CUDA_CHECK_LAUNCH();
      return;
    }
  }
  visit_dtype(dst_dtype, [&](auto dst_tag) {
    visit_dtype(src_dtype, [&](auto src_tag) {
      using To = decltype(dst_tag);
      using From = decltype(src_tag);
      convert_kernel<To, From><<<grid_for(n), kThreads, 0, stream>>>(static_cast<To*>(dst),
                                                                     static_cast<const From*>(src), n);
      ATTNLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace attnlab::cuda
