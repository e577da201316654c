// CUDA kernels of permute, split and concat. permute: one thread per output element, the input
// offset by index arithmetic over the output extents. split and concat: one strided 2-D copy per
// piece (cudaMemcpy2DAsync), x viewed as (outer, extent * inner) rows of bytes.
#include <cstdint>

#include "cuda/check.cuh"
#include "ops/shape_ops_cuda.h"

namespace attnlab::detail::cuda_shape_ops {
namespace {

constexpr int kThreads = 256;

// W: an unsigned word of the element size.
template <typename W>
__global__ void permute_kernel(const W* x,  // (numel), input layout
                               std::int64_t numel, PermuteIndex index,
                               W* out) {    // (numel), output layout
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= numel) return;
  std::int64_t rem = i;
  std::int64_t offset = 0;
  for (int a = index.rank - 1; a >= 0; --a) {
    offset += (rem % index.out_dims[a]) * index.in_strides[a];
    rem /= index.out_dims[a];
  }
  out[i] = x[offset];
}

template <typename W>
void launch_permute(const void* x, std::int64_t numel, const PermuteIndex& index, void* out,
                    cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((numel + kThreads - 1) / kThreads);
  permute_kernel<W><<<blocks, kThreads, 0, stream>>>(static_cast<const W*>(x), numel, index,
                                                     static_cast<W*>(out));
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void permute(const void* x, std::size_t elem_size, std::int64_t numel, const PermuteIndex& index, void* out,
             int device, cudaStream_t stream) {
  if (numel == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  switch (elem_size) {
    case 1: launch_permute<std::uint8_t>(x, numel, index, out, stream); break;
    case 2: launch_permute<std::uint16_t>(x, numel, index, out, stream); break;
    case 4: launch_permute<std::uint32_t>(x, numel, index, out, stream); break;
    case 8: launch_permute<std::uint64_t>(x, numel, index, out, stream); break;
    default: cuda::throw_message("permute: unsupported element size " + std::to_string(elem_size));
  }
}

void copy_rows(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
               std::size_t height, int device, cudaStream_t stream) {
  if (width == 0 || height == 0) return;
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device));
  // cudaMemcpy2DAsync refuses a pitch above the device's limit (cudaDevAttrMaxPitch, 2^31 - 1
  // bytes on current GPUs) with cudaErrorInvalidPitchValue. A split or concat along axis 0 has
  // height 1 and a pitch of the whole tensor, so any tensor over 2 GiB would fail: a single row,
  // or rows without gaps, is one plain copy; rows over the limit are copied one by one.
  if (height == 1 || (dpitch == width && spitch == width)) {
    ATTNLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, width * height, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  int max_pitch = 0;
  ATTNLAB_CUDA_CHECK(cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, device));
  if (dpitch > static_cast<std::size_t>(max_pitch) || spitch > static_cast<std::size_t>(max_pitch)) {
    for (std::size_t r = 0; r < height; ++r)
      ATTNLAB_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + r * dpitch,
                                         static_cast<const char*>(src) + r * spitch, width,
                                         cudaMemcpyDeviceToDevice, stream));
    return;
  }
  ATTNLAB_CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDeviceToDevice, stream));
}

}  // namespace attnlab::detail::cuda_shape_ops
