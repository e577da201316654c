#pragma once
// Launchers of cross_entropy_cuda.cu (plain types, no CUDA headers). X, the logits' element, is
// float, double or attnlab::bf16, and T the type they are computed in (float for bf16, else X);
// I is std::int32_t or std::int64_t; pointers are device pointers. The forward and backward read no
// target outside [0, v) (they are the check's to report).
#include <cstdint>

#include "attnlab/dtype.h"
#include "cuda/launch.h"

namespace attnlab::detail::cuda_cross_entropy {

// targets: (n); kept: (1), the count of targets equal to neither ignore_index nor a bad value. A
// target outside [0, v) that is not ignore_index is recorded in `check`, an index-check word
// (index_check.h; null: none).
template <typename I>
void check_targets(const I* targets, std::int64_t n, std::int64_t v, std::int64_t ignore_index,
                   std::uint64_t* check, std::int64_t* kept, int device, cudaStream_t stream);

// logits: (n, v); targets: (n); lse: (n); row_loss: (n) doubles of scratch; loss_sum: (1).
template <typename X, typename T, typename I>
void forward(const X* logits, const I* targets, std::int64_t n, std::int64_t v, double eps,
             std::int64_t ignore_index, T* lse, double* row_loss, T* loss_sum, int device,
             cudaStream_t stream);
// logits, dlogits: (n, v); targets, lse: (n); g: (1), the incoming gradient, read by the kernel.
template <typename X, typename T, typename I>
void backward(const X* logits, const I* targets, const T* lse, std::int64_t n, std::int64_t v, double eps,
              std::int64_t ignore_index, const T* g, X* dlogits, int device, cudaStream_t stream);

}  // namespace attnlab::detail::cuda_cross_entropy
