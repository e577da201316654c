#pragma once
// Launchers of layer_norm_cuda.cu (plain types, no CUDA headers). T is float or double; pointers
// are device pointers, null where the matching tensor is undefined.
#include <cstdint>

#include "cuda/launch.h"

namespace attnlab::detail::cuda_layer_norm {

// Rows of dgamma/dbeta partial sums: pass 1 sums each chunk of kRowChunk rows per column.
inline constexpr std::int64_t kRowChunk = 256;

// x, y: (rows, d); gamma, beta: (d) or null; mean, rstd: (rows). centered false: RMSNorm.
template <typename T>
void forward(const T* x, const T* gamma, const T* beta, std::int64_t rows, std::int64_t d, double eps,
             bool centered, T* y, T* mean, T* rstd, int device, cudaStream_t stream);
// x, dy, dx: (rows, d); gamma: (d) or null; mean, rstd: (rows).
template <typename T>
void backward_dx(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy, std::int64_t rows,
                 std::int64_t d, bool centered, T* dx, int device, cudaStream_t stream);
// dgamma, dbeta: (d) or null; partial: (2, ceil(rows / kRowChunk), d) doubles of scratch.
template <typename T>
void backward_params(const T* x, const T* mean, const T* rstd, const T* dy, std::int64_t rows,
                     std::int64_t d, double* partial, T* dgamma, T* dbeta, int device, cudaStream_t stream);

}  // namespace attnlab::detail::cuda_layer_norm
