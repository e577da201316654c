#pragma once
// Launchers of dropout_add_layer_norm_cuda.cu (plain types, no CUDA headers). T is float or double;
// pointers are device pointers, null where the matching tensor is undefined.
#include <cstdint>

#include "attnlab/philox.h"
#include "cuda/launch.h"

namespace attnlab::detail::cuda_dropout_add_layer_norm {

// Rows per chunk of the column sums (dgamma, dbeta, dbias): chunks first, then the chunks in order.
inline constexpr std::int64_t kRowChunk = 256;

// Element i of x is kept when philox::uniform(seed, offset, i) >= p; p == 0 keeps all of them.
// The kernels read the seed when they run (from device memory when it names a slot).
struct Mask {
  double p;
  philox::SeedRef seed;
  std::uint64_t offset;
};

// x, residual, sum, y: (rows, d); bias, gamma, beta: (d) or null; mean, rstd: (rows). sum may
// equal y (normalized in place). The residual is multiplied by residual_scale before the add; not
// centered, the row is RMSNorm's (mean 0).
template <typename T>
void forward(const T* x, const T* bias, const T* residual, const T* gamma, const T* beta, std::int64_t rows,
             std::int64_t d, Mask mask, double residual_scale, bool centered, double eps, T* sum, T* y, T* mean,
             T* rstd, int device, cudaStream_t stream);
// sum, dy, ds: (rows, d); ds_extra, dx: (rows, d) or null; gamma: (d) or null; mean, rstd: (rows).
// ds = the norm's backward + ds_extra; dx from that ds.
template <typename T>
void backward_rows(const T* sum, const T* gamma, const T* mean, const T* rstd, const T* dy, std::int64_t rows,
                   const T* ds_extra, std::int64_t d, Mask mask, bool centered, T* ds, T* dx, int device,
                   cudaStream_t stream);
// sum, dy: (rows, d); dx: (rows, d), or null when dbias is; dgamma, dbeta, dbias: (d) or null;
// partial: (3, ceil(rows / kRowChunk), d) doubles of scratch.
template <typename T>
void backward_params(const T* sum, const T* mean, const T* rstd, const T* dy, const T* dx, std::int64_t rows,
                     std::int64_t d, double* partial, T* dgamma, T* dbeta, T* dbias, int device,
                     cudaStream_t stream);

}  // namespace attnlab::detail::cuda_dropout_add_layer_norm
