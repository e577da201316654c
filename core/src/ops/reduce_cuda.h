#pragma once
// Launchers of reduce_cuda.cu (plain types, no CUDA headers). T is float or double; x is viewed
// as (outer, n, inner) with n the reduced extent; pointers are device pointers.
#include <cstdint>

#include "cuda/launch.h"

namespace attnlab::detail::cuda_reduce {

// Values per partial sum of a contiguous row (inner == 1): pass 1 sums each chunk, pass 2 adds
// the chunks of a row in order.
inline constexpr std::int64_t kChunk = 8192;

// x: (outer, n, inner); out: (outer, inner); partial: (outer, ceil(n / kChunk)) doubles of
// scratch, used when inner == 1.
template <typename T>
void sum(const T* x, std::int64_t outer, std::int64_t n, std::int64_t inner, double scale, double* partial,
         T* out, int device, cudaStream_t stream);
// g: (outer, inner); dx: (outer, n, inner) = scale * g broadcast over n.
template <typename T>
void sum_backward(const T* g, std::int64_t outer, std::int64_t n, std::int64_t inner, double scale, T* dx,
                  int device, cudaStream_t stream);

}  // namespace attnlab::detail::cuda_reduce
