#pragma once
// Launchers of shape_ops_cuda.cu (plain types, no CUDA headers). Byte movement only: any dtype.
#include <cstddef>
#include <cstdint>

#include "cuda/launch.h"

namespace attnlab::detail::cuda_shape_ops {

// out[i] = x at the input offset of i's multi-index over the output extents.
struct PermuteIndex {
  int rank = 0;                                    // <= cuda::kMaxRank
  std::int64_t out_dims[cuda::kMaxRank] = {};      // extent of each output axis
  std::int64_t in_strides[cuda::kMaxRank] = {};    // input stride (elements) of each output axis
};

// x, out: (numel) elements of elem_size bytes (1, 2, 4 or 8).
void permute(const void* x, std::size_t elem_size, std::int64_t numel, const PermuteIndex& index, void* out,
             int device, cudaStream_t stream);
// height rows of width bytes from src (rows spitch bytes apart) to dst (dpitch bytes apart).
void copy_rows(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
               std::size_t height, int device, cudaStream_t stream);

}  // namespace attnlab::detail::cuda_shape_ops
