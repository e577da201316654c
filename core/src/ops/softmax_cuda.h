#pragma once
// Launchers of softmax_cuda.cu (plain types, no CUDA headers). T is float or double; pointers
// are device pointers; the device is made current before the launch.
#include <cstdint>

#include "cuda/launch.h"

namespace attnlab::detail::cuda_softmax {

// Where row r of x starts in the broadcast mask: r decomposed over x's leading extents `dims`
// (all but the last axis), each index times the mask's stride (0 along a broadcast axis).
struct MaskIndex {
  int rank = 0;  // number of leading axes, <= cuda::kMaxRank
  std::int64_t dims[cuda::kMaxRank] = {};
  std::int64_t strides[cuda::kMaxRank] = {};
  std::int64_t key_step = 1;  // 1, or 0 when the mask's last extent is 1
};

// x, y: (rows, cols); mask: null or broadcast as `index`; tq = x.dim(-2) when causal.
template <typename T>
void forward(const T* x, const T* mask, const MaskIndex& index, std::int64_t rows, std::int64_t cols,
             bool causal, std::int64_t tq, bool log, T* y, int device, cudaStream_t stream);
// y, dy, dx: (rows, cols).
template <typename T>
void backward(const T* y, const T* dy, std::int64_t rows, std::int64_t cols, bool log, T* dx,
              int device, cudaStream_t stream);

}  // namespace attnlab::detail::cuda_softmax
